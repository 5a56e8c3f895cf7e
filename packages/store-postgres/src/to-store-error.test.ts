import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { toStoreError } from './to-store-error.js';

function pgError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code, severity: 'ERROR' });
}

describe('toStoreError', () => {
  it.each([
    ['40P01', 'deadlock detected', 'store-unavailable', true],
    ['40001', 'could not serialize access', 'store-unavailable', true],
    ['57P01', 'terminating connection due to administrator command', 'store-unavailable', true],
    ['08006', 'connection failure', 'store-unavailable', true],
    ['ECONNREFUSED', 'connect ECONNREFUSED 127.0.0.1:5432', 'store-unavailable', true],
    ['22P05', 'unsupported Unicode escape sequence', 'invalid-argument', false],
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00', 'invalid-argument', false],
    ['3F000', 'schema "x" does not exist', 'store-unavailable', false],
    ['XX000', 'internal error', 'internal', false],
  ])('maps %s to %s', (code, message, expected, retryable) => {
    const error = toStoreError(pgError(code, message));
    expect(LunationError.hasCode(error, expected as never)).toBe(true);
    expect(error.isRetryable).toBe(retryable);
    expect(error.message).toContain(message);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it('passes LunationErrors through and names the pool error when the server went away', () => {
    const original = new LunationError('not-found', 'nope');
    expect(toStoreError(original)).toBe(original);
    const error = toStoreError(new Error('Connection terminated unexpectedly'), new Error('read ECONNRESET'));
    expect(error.code).toBe('store-unavailable');
    expect(error.message).toContain('after: read ECONNRESET');
  });
});
