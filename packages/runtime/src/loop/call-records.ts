import {
  type ContentPart,
  type Message,
  type ResumeDecision,
  resumeDecisionSchema,
  type SuspensionTicket,
  suspensionTicketSchema,
  type ToolCall,
  type ToolCallStatus,
  type ToolMessage,
  type ToolResult,
  type ToolResultPart,
  toolCallStatusSchema,
  toolResultSchema,
} from '@lunation/contract';
import { z } from 'zod';
import { defineStateKey } from '../state.js';

/**
 * What the store knows about one tool call of the thread's open step (the last assistant message whose calls
 * are not all answered yet): its gate outcome, its ticket and decision, its result. Calls that were allowed
 * and started have no record: their ledger entry (in flight, then completed) is their record.
 */
export interface ToolCallRecord {
  toolCallId: string;
  toolName: string;
  /** The run that made the call; its ledger entries are keyed by it. */
  runId: string;
  status: ToolCallStatus;
  /** While `suspended`, and kept once decided. */
  ticket?: SuspensionTicket;
  /** Once `resuming`. */
  decision?: ResumeDecision;
  /** Once settled: `succeeded`, `failed`, `denied`, `cancelled` or `abandoned`. */
  result?: ToolResult;
  /** Ledger attempts already used when the tool itself asked for the decision. */
  attempts?: number;
}

export type ToolCallsUpdate = { type: 'set'; records: readonly ToolCallRecord[] } | { type: 'clear' };

const toolCallRecordSchema = z.object({
  toolCallId: z.string(),
  toolName: z.string(),
  runId: z.string(),
  status: toolCallStatusSchema,
  ticket: suspensionTicketSchema.optional(),
  decision: resumeDecisionSchema.optional(),
  result: toolResultSchema.optional(),
  attempts: z.number().int().nonnegative().optional(),
});

/** The open step's call records by tool call id, in thread state, so they survive the process. */
export const toolCallsKey = defineStateKey<Record<string, ToolCallRecord>, ToolCallsUpdate>({
  name: 'runtime.toolCalls',
  schema: z.record(z.string(), toolCallRecordSchema),
  initial: () => ({}),
  scope: 'thread',
  apply: (value, update) => {
    if (update.type === 'clear') return {};
    const next = { ...value };
    for (const record of update.records) next[record.toolCallId] = record;
    return next;
  },
});

/** The tickets of the suspended calls: exactly what a run record's `openTickets` must say. */
export function openTickets(records: Readonly<Record<string, ToolCallRecord>>): SuspensionTicket[] {
  const tickets: SuspensionTicket[] = [];
  for (const id in records) {
    const record = records[id] as ToolCallRecord;
    if (record.status === 'suspended' && record.ticket) tickets.push(record.ticket);
  }
  return tickets;
}

/** The call records of a thread state, by tool call id. */
export function toolCallRecords(
  threadState: Readonly<Record<string, unknown>>,
): Record<string, ToolCallRecord> {
  return (threadState[toolCallsKey.name] ?? {}) as Record<string, ToolCallRecord>;
}

const LEGACY_PENDING_CALLS = 'runtime.pendingCalls';

/**
 * Thread state written by earlier versions kept suspended calls under `runtime.pendingCalls` (by ticket id);
 * they become call records. Returns the state unchanged when there is nothing to upgrade.
 */
export function upgradeThreadState(threadState: Record<string, unknown>): Record<string, unknown> {
  const legacy = threadState[LEGACY_PENDING_CALLS] as
    | Record<string, { ticket: SuspensionTicket; decision?: ResumeDecision }>
    | undefined;
  if (legacy === undefined) return threadState;
  const { [LEGACY_PENDING_CALLS]: _, ...rest } = threadState;
  const records = { ...toolCallRecords(rest) };
  for (const { ticket, decision } of Object.values(legacy)) {
    records[ticket.toolCallId] = {
      toolCallId: ticket.toolCallId,
      toolName: ticket.toolName,
      runId: ticket.runId,
      status: decision ? 'resuming' : 'suspended',
      ticket,
      ...(decision ? { decision } : {}),
    };
  }
  return Object.keys(records).length > 0 ? { ...rest, [toolCallsKey.name]: records } : rest;
}

/** The index of the last message before the trailing tool messages: the thread's last step's answer. */
function lastAnswerIndex(messages: readonly Message[]): number {
  let index = messages.length - 1;
  while (index >= 0 && messages[index]?.role === 'tool') index--;
  return index;
}

/** Whether the thread has an open step ({@link unansweredCalls}), building no list when its last step has no call. */
export function hasUnansweredCall(messages: readonly Message[]): boolean {
  const last = messages[lastAnswerIndex(messages)];
  if (last?.role !== 'assistant') return false;
  for (const part of last.content as ContentPart[]) {
    if (part.type === 'tool-call') return unansweredCalls(messages).length > 0;
  }
  return false;
}

/** Tool calls of the last assistant message that no later tool message answers: the thread's open step. */
export function unansweredCalls(messages: readonly Message[]): ToolCall[] {
  const index = lastAnswerIndex(messages);
  const last = messages[index];
  if (last?.role !== 'assistant') return [];
  const calls: ToolCall[] = [];
  let answered: Set<string> | undefined;
  for (const part of last.content as ContentPart[]) {
    if (part.type !== 'tool-call') continue;
    if (answered === undefined) {
      answered = new Set();
      for (let later = index + 1; later < messages.length; later++) {
        for (const result of (messages[later] as ToolMessage).content) answered.add(result.toolCallId);
      }
    }
    if (!answered.has(part.toolCallId)) {
      const call: ToolCall = {
        toolCallId: part.toolCallId,
        toolName: part.toolName,
        arguments: part.arguments,
      };
      if (part.callId !== undefined) call.callId = part.callId;
      calls.push(call);
    }
  }
  return calls;
}

/**
 * Results for every unanswered call of the open step, in call order: the recorded result when there is one,
 * otherwise `fallback` (given the call's record, if any).
 */
export function answerOpenStep(
  messages: readonly Message[],
  records: Readonly<Record<string, ToolCallRecord>>,
  fallback: (record: ToolCallRecord | undefined) => ToolResult,
): ToolResultPart[] {
  return unansweredCalls(messages).map((call) => {
    const record = records[call.toolCallId];
    return {
      type: 'tool-result',
      toolCallId: call.toolCallId,
      toolName: call.toolName,
      result: record?.result ?? fallback(record),
    };
  });
}

/** The error result of a call cut off mid-way that will not run again. */
export function interruptedResult(detail: string): ToolResult {
  return {
    status: 'error',
    message: `This call was interrupted (the process running it stopped) after it started, so it may or may not have taken effect. ${detail}`,
    metadata: { interrupted: true },
  };
}
