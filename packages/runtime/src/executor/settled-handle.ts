import {
  emptyUsage,
  type RunIdentity,
  type RunRecord,
  type SuspensionTicket,
  type TerminationReason,
} from '@lunation/contract';
import { EventStream } from '../event-stream.js';
import type { RunResult } from '../loop/run-scope.js';
import type { RunHandle } from './run-options.js';
import type { Seams } from './seams.js';

/**
 * The handle of a run() that continued nothing (every decision was applied before): it reports the thread's
 * waiting (or finished) run as the store has it. Decisions are applied, and `tool-call-resumed` emitted, only by
 * the loop's resume stage.
 */
export function settledHandle(
  threadId: string,
  run: RunRecord | undefined,
  tickets: SuspensionTicket[],
  { clock, ids }: Seams,
): RunHandle {
  const identity: RunIdentity = run?.identity ?? {
    threadId,
    runId: ids.id(),
    agentId: 'unknown',
    origin: 'user',
  };
  const status = run?.status ?? (tickets.length > 0 ? 'waiting' : 'done');
  const termination: TerminationReason =
    run?.termination ?? (tickets.length > 0 ? { type: 'suspended' } : { type: 'natural-end' });
  const result: RunResult = {
    identity,
    status,
    termination,
    finalText: run?.finalText ?? '',
    steps: run?.steps ?? 0,
    usage: run?.usage ?? emptyUsage(),
    openTickets: tickets,
    messages: [],
  };
  const stream = new EventStream();
  stream.push({
    type: 'run-end',
    identity,
    seq: 0,
    status,
    termination,
    finalText: result.finalText,
    steps: result.steps,
    usage: result.usage,
    openTickets: tickets,
    timestamp: clock.now(),
  });
  stream.close();
  return {
    runId: identity.runId,
    threadId,
    identity,
    events: stream,
    result: Promise.resolve(result),
    cancel: () => {},
  };
}
