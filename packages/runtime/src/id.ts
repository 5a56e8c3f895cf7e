import { randomUUID } from 'node:crypto';

const prefix = `${randomUUID()}-`;
let counter = 0;

/**
 * A new unique id: a random per-process UUID plus a counter, so ids are unique across processes and cheap to
 * make (no entropy is drawn per id). They are guessable within a process: do not use them as secrets or as
 * ids whose knowledge grants access (use `crypto.randomUUID()` for those).
 */
export function createId(): string {
  counter++;
  return prefix + counter.toString(36);
}

/** {@link createId}'s prefix with `lc_` before it, joined once: a call id is one string piece less per call. */
const callPrefix = `lc_${prefix}`;

/**
 * A new runtime call id (`callId`): `lc_` and a {@link createId} id. Kept in the thread with every tool call, so
 * built from one pre-joined prefix (a joined string per call costs memory as long as the thread is kept).
 */
export function createCallId(): string {
  counter++;
  return callPrefix + counter.toString(36);
}
