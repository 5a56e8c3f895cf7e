import { LunationError } from '../errors.js';

/** Checks `ToolEffectInput.signal`: absent, or an AbortSignal (`invalid-argument` otherwise). */
export function assertEffectSignal(signal: unknown): asserts signal is AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal))
    throw new LunationError('invalid-argument', 'signal must be an AbortSignal');
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
