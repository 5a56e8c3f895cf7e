import { LunationError } from '../errors.js';
import type { ToolEffectInput } from '../tool-effects.js';
import { assertId, assertInteger } from './store-input.js';

/** Checks `ToolEffectInput.signal`: absent, or an AbortSignal (`invalid-argument` otherwise). */
export function assertEffectSignal(signal: unknown): asserts signal is AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new LunationError('invalid-argument', 'signal must be an AbortSignal');
}

/**
 * The checks every store makes on `completeToolExecutionWithEffect` before opening its transaction: the ids,
 * the lease token, that `effect` is a function and `signal` an AbortSignal (`invalid-argument`), and that the
 * signal has not aborted yet (its reason is thrown).
 */
export function assertToolEffect(input: ToolEffectInput, effect: unknown): void {
  assertId(input.runId, 'runId');
  assertId(input.toolCallId, 'toolCallId');
  if (input.leaseToken !== undefined) assertInteger(input.leaseToken, 'leaseToken', 1);
  if (typeof effect !== 'function') throw new LunationError('invalid-argument', 'effect must be a function');
  assertEffectSignal(input.signal);
  input.signal?.throwIfAborted();
}

/**
 * Runs a tool's effect for `completeToolExecutionWithEffect` until `signal` aborts. An abort rejects at once
 * with the signal's reason, without waiting for the effect (whose own outcome is then ignored), so the store
 * rolls its transaction back; the signal is checked again when the effect returns, so a store writes the
 * completion only while it stands.
 */
export async function runEffectUntilAborted<Result>(
  effect: () => Promise<Result>,
  signal: AbortSignal | undefined,
): Promise<Result> {
  if (signal === undefined) return effect();
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason);
  });
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const running = effect();
    running.catch(() => {}); // once aborted, the effect's failure is nobody's to handle
    const result = await Promise.race([running, aborted]);
    signal.throwIfAborted();
    return result;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
