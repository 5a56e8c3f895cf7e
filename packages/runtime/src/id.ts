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
