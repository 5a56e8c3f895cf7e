import { describe, expect, it } from 'vitest';
import { LunationError } from '../errors.js';
import { parseRetryAfter, resolveRetryPolicy, retryDelay, streamWithRetries } from './provider-retry.js';

const policy = resolveRetryPolicy({ initialDelayMs: 100, maxDelayMs: 1_000 }, undefined);

describe('retryDelay', () => {
  it('draws a full-jitter delay below an exponentially growing ceiling, capped at maxDelayMs', () => {
    expect([0, 1, 2, 3, 4, 5].map((retry) => retryDelay(policy, retry, undefined, () => 0.999_999))).toEqual([
      99, 199, 399, 799, 999, 999,
    ]);
    expect(retryDelay(policy, 3, undefined, () => 0)).toBe(0);
    expect(retryDelay(policy, 1, undefined, () => 0.5)).toBe(100);
  });

  it('never waits less than Retry-After', () => {
    expect(retryDelay(policy, 0, 2_500, () => 0.5)).toBe(2_500);
    expect(retryDelay(policy, 4, 10, () => 0.5)).toBe(500);
  });

  it('defaults to 2 retries from 500 ms up to 8 s; maxRetries is a shorthand', () => {
    expect(resolveRetryPolicy(undefined, undefined)).toEqual({
      maxRetries: 2,
      initialDelayMs: 500,
      maxDelayMs: 8_000,
      maxRetryAfterMs: 60_000,
    });
    expect(resolveRetryPolicy(undefined, 5).maxRetries).toBe(5);
    expect(resolveRetryPolicy({ maxRetries: 1 }, 5).maxRetries).toBe(1);
  });
});

describe('parseRetryAfter', () => {
  const headers = (values: Record<string, string>) => new Headers(values);
  const now = Date.parse('2025-06-01T12:00:00Z');

  it('reads retry-after-ms first, then retry-after seconds or an HTTP date', () => {
    expect(parseRetryAfter(headers({ 'retry-after-ms': '250.4', 'retry-after': '9' }), now)).toBe(250);
    expect(parseRetryAfter(headers({ 'retry-after': '3' }), now)).toBe(3_000);
    expect(parseRetryAfter(headers({ 'retry-after': '0.5' }), now)).toBe(500);
    expect(parseRetryAfter(headers({ 'retry-after': 'Sun, 01 Jun 2025 12:00:20 GMT' }), now)).toBe(20_000);
    expect(parseRetryAfter(headers({ 'retry-after': 'Sun, 01 Jun 2025 11:00:00 GMT' }), now)).toBe(0);
  });

  it('ignores missing or malformed values', () => {
    expect(parseRetryAfter(undefined)).toBeUndefined();
    expect(parseRetryAfter(headers({}))).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(parseRetryAfter(headers({ 'retry-after-ms': '-1' }))).toBeUndefined();
  });
});

describe('streamWithRetries', () => {
  const failing = (error: unknown): AsyncIterable<never> => ({
    [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }),
  });
  const cancelled = () => new LunationError('cancelled', 'cancelled');

  it('does not wait for a Retry-After longer than maxRetryAfterMs', async () => {
    let attempts = 0;
    const stream = streamWithRetries({
      policy: { ...policy, maxRetryAfterMs: 1_000 },
      signal: undefined,
      cancelled,
      attempt: () => {
        attempts++;
        return failing(new LunationError('rate-limited', 'slow down', { retryAfterMs: 30_000 }));
      },
    });
    await expect(stream.next()).rejects.toMatchObject({ code: 'rate-limited', retryAfterMs: 30_000 });
    expect(attempts).toBe(1);
  });

  it('wraps a non-Lunation error as "internal" and does not retry it', async () => {
    let attempts = 0;
    const stream = streamWithRetries({
      policy,
      signal: undefined,
      cancelled,
      attempt: () => {
        attempts++;
        return failing(new TypeError('boom'));
      },
    });
    await expect(stream.next()).rejects.toMatchObject({ code: 'internal' });
    expect(attempts).toBe(1);
  });

  describe('idle timeout', () => {
    /** Yields `parts`, then never settles unless its signal aborts. */
    function stalling(parts: string[], signals: AbortSignal[]) {
      return (signal: AbortSignal): AsyncIterable<string> => {
        signals.push(signal);
        return (async function* () {
          yield* parts;
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
        })();
      };
    }

    it('retries a stream that stalls before its first part, as a timeout, and aborts the attempt', async () => {
      const signals: AbortSignal[] = [];
      const stream = streamWithRetries({
        policy: { ...policy, maxRetries: 1, initialDelayMs: 1 },
        signal: undefined,
        cancelled,
        idleTimeoutMs: 30,
        attempt: stalling([], signals),
      });
      await expect(stream.next()).rejects.toMatchObject({ code: 'timeout', details: { attempts: 2 } });
      expect(signals).toHaveLength(2);
      expect(signals.every((signal) => signal.aborted)).toBe(true);
    });

    it('ends a stream that stalls after its first part with stream-interrupted, keeping the parts', async () => {
      const signals: AbortSignal[] = [];
      const stream = streamWithRetries({
        policy,
        signal: undefined,
        cancelled,
        idleTimeoutMs: 30,
        attempt: stalling(['a', 'b'], signals),
      });
      const seen: string[] = [];
      await expect(
        (async () => {
          for await (const part of stream) seen.push(part);
        })(),
      ).rejects.toMatchObject({ code: 'stream-interrupted', isRetryable: false });
      expect(seen).toEqual(['a', 'b']);
      expect(signals).toHaveLength(1);
      expect(signals[0]?.aborted).toBe(true);
    });

    it('does not fire while parts keep arriving, even when the whole stream lasts longer than the timeout', async () => {
      const stream = streamWithRetries({
        policy,
        signal: undefined,
        cancelled,
        idleTimeoutMs: 40,
        attempt: () =>
          (async function* () {
            for (let index = 0; index < 6; index++) {
              await new Promise((resolve) => setTimeout(resolve, 15));
              yield index;
            }
          })(),
      });
      const seen: number[] = [];
      for await (const part of stream) seen.push(part);
      expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
    });
  });
});
