import type { RunSummary } from './api-types.js';

/** When a run started, as the page shows it: the time, with the date when it is not today. */
export function startedAt(epochMs: number, now = Date.now()): string {
  const date = new Date(epochMs);
  const sameDay = new Date(now).toDateString() === date.toDateString();
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  return sameDay ? time : `${date.toLocaleDateString(undefined, { day: 'numeric', month: 'short' })} ${time}`;
}

/**
 * A run's label within its thread: its number in the thread (runs are listed oldest first) and when it started.
 * Run ids of one process share a long prefix, so a slice of the id would label every run alike.
 */
export function runLabel(run: Pick<RunSummary, 'createdAt'>, index: number): string {
  return `Run ${index + 1}, started ${startedAt(run.createdAt)}`;
}
