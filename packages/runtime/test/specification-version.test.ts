import { LunationError, type ModelProvider } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../store-memory/src/index.js';
import { AgentRuntime, createRuntime } from '../src/index.js';
import { ScriptedModel } from '../src/testing/index.js';

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
  it('a model of another version fails the build, naming both versions, before any run', () => {
    const model = declaring(new ScriptedModel([]), 'v2') as unknown as ModelProvider;
    const error = thrown(() => createRuntime().model('old', model).agent({ id: 'a', model: 'old' }).build());
    expect(error.code).toBe('specification-mismatch');
    expect(error.message).toContain('model "old" implements specification v2');
    expect(error.message).toContain('defines model specification v1');
    expect(error.details).toEqual({ kind: 'model', expected: 'v1', actual: 'v2' });
  });

  it('a store without a version is refused when the runtime is built', () => {
    const store = declaring(new MemoryStore(), undefined);
    const error = thrown(
      () =>
        new AgentRuntime({ models: { m: new ScriptedModel([]) }, agents: [{ id: 'a', model: 'm' }], store }),
    );
    expect(error.code).toBe('specification-mismatch');
    expect(error.message).toContain('store "memory" implements no specificationVersion');
  });

  it("adapters declaring this contract's versions are accepted", () => {
    const runtime = createRuntime()
      .model('m', new ScriptedModel([]))
      .agent({ id: 'a', model: 'm' })
      .store(new MemoryStore())
      .build();
    expect(runtime).toBeInstanceOf(AgentRuntime);
  });
});
