import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../store-memory/src/index.js';
import { FleetClient, LocalDispatchBackend, LocalDispatcher } from '../src/index.js';

/** The error `act` throws; fails the test when it throws nothing. */
function thrown(act: () => unknown): LunationError {
  try {
    act();
  } catch (error) {
    if (LunationError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a LunationError');
}

/** `adapter` declaring `version` instead of its own (what an adapter built for another contract looks like). */
function declaring<T extends object>(adapter: T, version: unknown): T {
  return new Proxy(adapter, {
    get: (target, key) => (key === 'specificationVersion' ? version : Reflect.get(target, key, target)),
  });
}

describe('specification versions', () => {
  it('a fleet client refuses a dispatcher of another version', () => {
    const dispatcher = declaring(new LocalDispatcher({ backend: new LocalDispatchBackend() }), 'v0');
    const error = thrown(() => new FleetClient({ dispatcher, store: new MemoryStore() }));
    expect(error.code).toBe('specification-mismatch');
    expect(error.details).toEqual({ kind: 'dispatcher', expected: 'v3', actual: 'v0' });
  });
});
