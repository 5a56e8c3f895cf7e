import {
  type AgentEvent,
  type AssistantMessage,
  emptyUsage,
  type MessageRecord,
  type RunEventLog,
  type RunRecord,
  type ToolResult,
} from '@lunation/contract';
import type { ToolCallRecord } from '@lunation/runtime';

/** What a run's event log already tells of its committed work. */
export interface LoggedRun {
  /** Steps whose `step-end` is in the log. */
  stepEnds: Set<number>;
  /** Tool calls whose `tool-result` is in the log. */
  results: Set<string>;
  /** The log's last event. */
  last: AgentEvent | undefined;
  /** Whether the log has its end mark. */
  ended: boolean;
}

/** Events without the `seq` the pipe numbers them with. */
export type UnnumberedEvent = AgentEvent extends infer Event
  ? Event extends AgentEvent
    ? Omit<Event, 'seq'>
    : never
  : never;

/** Reads what a run's log holds (every page: repairs are rare and logs bounded). */
export async function readLoggedRun(log: RunEventLog, runId: string): Promise<LoggedRun> {
  const logged: LoggedRun = { stepEnds: new Set(), results: new Set(), last: undefined, ended: false };
  let after = '0';
  for (;;) {
    const page = await log.readEvents(runId, { after, limit: 1_000 });
    for (const { event } of page.events) {
      if (event.type === 'step-end') logged.stepEnds.add(event.step);
      else if (event.type === 'tool-result') logged.results.add(event.toolCallId);
      logged.last = event;
    }
    const tail = page.events.at(-1);
    logged.ended = page.ended;
    if (tail === undefined || page.events.length < 1_000) return logged;
    after = tail.id;
  }
}

/**
 * The events the store's committed work of `run` calls for and its log lacks, in order: for each committed step
 * whose `step-end` is missing, the step as its assistant message has it (text, tool calls), the results
 * committed for its calls, and its end; then results committed for logged steps but missing from the log (a
 * resumed step's). The store is the truth and the log a view of it: a worker that died (or whose appends failed)
 * after a commit but before its events reached the log leaves exactly these out.
 */
export function missingEvents(
  run: RunRecord,
  messages: readonly MessageRecord[],
  logged: LoggedRun,
  /** The open step's settled calls (a gate's denial, a decided call): results not yet in a tool message. */
  settled: Readonly<Record<string, ToolCallRecord>> = {},
): UnnumberedEvent[] {
  const { identity } = run;
  const own = messages.filter(
    (record) => (record.runId ?? record.message.metadata?.runId) === identity.runId,
  );
  const results = new Map<string, { toolName: string; result: ToolResult; step: number }>();
  for (const { message } of own) {
    if (message.role !== 'tool') continue;
    const step = stepOf(message.metadata);
    for (const part of message.content) {
      results.set(part.toolCallId, { toolName: part.toolName, result: part.result, step });
    }
  }
  for (const record of Object.values(settled)) {
    if (record.result === undefined || record.runId !== identity.runId || results.has(record.toolCallId))
      continue;
    results.set(record.toolCallId, { toolName: record.toolName, result: record.result, step: run.steps });
  }
  const events: UnnumberedEvent[] = [];
  const resultEvent = (toolCallId: string) => {
    const found = results.get(toolCallId);
    if (found === undefined || logged.results.has(toolCallId)) return;
    logged.results.add(toolCallId);
    events.push({
      identity,
      type: 'tool-result',
      step: found.step,
      toolCallId,
      toolName: found.toolName,
      status: found.result.status === 'success' ? 'succeeded' : 'failed',
      result: found.result,
      fromLedger: true,
    });
  };
  for (const { message } of own) {
    if (message.role !== 'assistant') continue;
    const step = stepOf(message.metadata);
    if (logged.stepEnds.has(step)) continue;
    events.push(...stepEvents(identity, step, message));
    for (const part of message.content) if (part.type === 'tool-call') resultEvent(part.toolCallId);
    events.push({ identity, type: 'step-end', step, usage: emptyUsage() });
    logged.stepEnds.add(step);
  }
  for (const toolCallId of results.keys()) resultEvent(toolCallId);
  return events;
}

/** The `run-end` the run record calls for when the log's last event does not already say it, stamped `now`. */
export function missingRunEnd(
  run: RunRecord,
  last: AgentEvent | undefined,
  now: number,
): UnnumberedEvent | undefined {
  const { termination } = run;
  if (termination === undefined || run.status === 'running' || run.status === 'created') return undefined;
  const tickets = (event: { openTickets: Array<{ id: string }> }) =>
    event.openTickets.map((ticket) => ticket.id).join();
  if (last?.type === 'run-end' && last.status === run.status && tickets(last) === tickets(run))
    return undefined;
  return {
    identity: run.identity,
    type: 'run-end',
    status: run.status,
    termination,
    finalText: run.finalText ?? '',
    steps: run.steps,
    usage: run.usage,
    openTickets: run.openTickets,
    timestamp: now,
  };
}

function stepEvents(
  identity: RunRecord['identity'],
  step: number,
  message: AssistantMessage,
): UnnumberedEvent[] {
  const events: UnnumberedEvent[] = [{ identity, type: 'step-start', step }];
  for (const part of message.content) {
    if (part.type === 'text' && part.text.length > 0) {
      events.push({ identity, type: 'text-delta', step, delta: part.text });
    } else if (part.type === 'tool-call') {
      const { toolCallId, toolName } = part;
      events.push({ identity, type: 'tool-call-start', step, toolCallId, toolName });
      events.push({ identity, type: 'tool-call-end', step, toolCallId, toolName, arguments: part.arguments });
    }
  }
  return events;
}

function stepOf(metadata: Record<string, unknown> | undefined): number {
  const step = metadata?.step;
  return typeof step === 'number' ? step : 0;
}
