import { LunationError } from '../errors.js';
import type { AgentEvent } from '../events.js';

/**
 * Checks the arguments of `appendEvents`: `events` an array, `fence` (when given) a non-negative safe integer,
 * and, with a fence, every event's `seq` an integer (the log dedupes on it). Resolves the fence.
 */
export function assertAppendEvents(
  events: readonly AgentEvent[],
  options: { fence?: number } | undefined,
): number | undefined {
  if (!Array.isArray(events)) throw new LunationError('invalid-argument', 'events must be an array');
  const fence = assertFence(options?.fence);
  if (fence === undefined) return undefined;
  for (let index = 0; index < events.length; index++) {
    const seq = (events[index] as { seq?: unknown } | undefined)?.seq;
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0) {
      throw new LunationError(
        'invalid-argument',
        `events[${index}].seq must be a non-negative integer when appending with a fence (the log takes each seq once per fence), got ${JSON.stringify(seq) ?? String(seq)}`,
      );
    }
  }
  return fence;
}

/** Checks a fence option: undefined, or a non-negative safe integer (a thread lease's fencing token). */
export function assertFence(fence: unknown): number | undefined {
  if (fence === undefined) return undefined;
  if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 0) {
    throw new LunationError(
      'invalid-argument',
      `fence must be the fencing token of the thread's lease (a non-negative integer), got ${JSON.stringify(fence) ?? String(fence)}`,
    );
  }
  return fence;
}

/** The `stale-lease` error of a run event log written to under an older lease than it has seen. */
export function staleEventFenceError(runId: string, fence: number, logFence: number): LunationError {
  return new LunationError(
    'stale-lease',
    `Run "${runId}"'s event log was written under lease fence ${logFence}, newer than this write's fence ${fence}; a newer lease holds the thread: stop writing to this run`,
    { details: { runId, fence, logFence } },
  );
}

/** The `stale-lease` error of an append to a run event log after its end mark. */
export function eventLogEndedError(runId: string): LunationError {
  return new LunationError(
    'stale-lease',
    `Run "${runId}"'s event log is ended (endEvents was called); nothing more is appended to it: stop writing to this run`,
    { details: { runId, ended: true } },
  );
}
