import { describe, expect, it } from 'vitest';
import { errorInfoSchema, LunationError, toErrorInfo } from './errors.js';

describe('LunationError', () => {
  it('carries code, cause, retryability and details', () => {
    const cause = new Error('socket hang up');
    const error = new LunationError('rate-limited', 'Rate limited; retry in 2s', {
      cause,
      retryAfterMs: 2000,
      status: 429,
    });
    expect(error.code).toBe('rate-limited');
    expect(error.isRetryable).toBe(true);
    expect(error.retryAfterMs).toBe(2000);
    expect(error.status).toBe(429);
    expect(error.cause).toBe(cause);
    expect(error.name).toBe('LunationError');
    expect(new LunationError('unauthorized', 'bad key').isRetryable).toBe(false);
    expect(new LunationError('unauthorized', 'bad key', { retryable: true }).isRetryable).toBe(true);
  });

  it('is recognised across copies of the package through a global symbol', () => {
    const foreign = Object.assign(new Error('x'), {
      [Symbol.for('lunation.error')]: true,
      code: 'not-found',
    });
    expect(LunationError.isInstance(foreign)).toBe(true);
    expect(LunationError.isInstance(new Error('plain'))).toBe(false);
    expect(LunationError.isInstance('string')).toBe(false);
    expect(LunationError.isInstance(null)).toBe(false);
    expect(LunationError.hasCode(new LunationError('thread-busy', 'busy'), 'thread-busy')).toBe(true);
    expect(LunationError.hasCode(new LunationError('thread-busy', 'busy'), 'not-found')).toBe(false);
  });

  it('serialises to a valid ErrorInfo, and unknown throwables become internal', () => {
    const info = new LunationError('not-found', 'Thread "t1" does not exist', {
      details: { threadId: 't1' },
    }).toJSON();
    expect(errorInfoSchema.parse(JSON.parse(JSON.stringify(info)))).toEqual({
      code: 'not-found',
      message: 'Thread "t1" does not exist',
      retryable: false,
      details: { threadId: 't1' },
    });
    expect(toErrorInfo(new TypeError('boom'))).toEqual({
      code: 'internal',
      message: 'boom',
      retryable: false,
    });
    expect(toErrorInfo('weird')).toEqual({ code: 'internal', message: 'weird', retryable: false });
  });

  it('rejects an unknown code with a readable message', () => {
    const result = errorInfoSchema.safeParse({ code: 'nope', message: 'x', retryable: false });
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.path).toEqual(['code']);
    expect(result.error?.issues[0]?.message).toMatch(/expected one of/i);
  });
});
