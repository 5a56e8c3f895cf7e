import {
  emptyUsage,
  type ResumeDecision,
  type RunIdentity,
  type RunRecord,
  type SuspensionTicket,
  type TerminationReason,
} from '@lunation/contract';
import { EventStream } from '../event-stream.js';
import { createId } from '../id.js';
import type { ToolCallRecord } from '../loop/call-records.js';
import type { RunResult } from '../loop/run-scope.js';
import type { RunHandle } from './run-options.js';

/**
 * The handle of a run() that continued nothing (some tickets are still open, or every decision was applied
 * before): it reports the thread's waiting (or finished) run as the store has it.
 */
export function settledHandle(
  threadId: string,
  run: RunRecord | undefined,
  tickets: SuspensionTicket[],
  decisions: ResumeDecision[],
  records: Readonly<Record<string, ToolCallRecord>>,
): RunHandle {
  const identity: RunIdentity = run?.identity ?? {
    threadId,
    runId: createId(),
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
  let seq = 0;
  const callOfTicket = new Map<string, string>();
  for (const record of Object.values(records))
    if (record.ticket) callOfTicket.set(record.ticket.id, record.toolCallId);
  for (const decision of decisions) {
    stream.push({
      type: 'tool-call-resumed',
      identity,
      seq: seq++,
      toolCallId: callOfTicket.get(decision.ticketId) ?? '',
      decision,
    });
  }
  stream.push({
    type: 'run-end',
    identity,
    seq: seq++,
    status,
    termination,
    finalText: result.finalText,
    steps: result.steps,
    usage: result.usage,
    openTickets: tickets,
    timestamp: Date.now(),
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
