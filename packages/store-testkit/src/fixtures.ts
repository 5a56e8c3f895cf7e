import {
  type AssistantMessage,
  type BeginToolExecutionInput,
  type ErrorCode,
  emptyUsage,
  LunationError,
  type RunRecord,
  type ToolExecution,
  type ToolMessage,
  type ToolResult,
  type UserMessage,
} from '@lunation/contract';
import { expect } from 'vitest';

let counter = 0;
const prefix = Math.random().toString(36).slice(2, 8);

/** A short id unique within this process, e.g. `thread-k3x9a1-7`. */
export function uniqueId(label = 'id'): string {
  counter += 1;
  return `${label}-${prefix}-${counter}`;
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A user message with one text part and a fresh id. */
export function makeUserMessage(text = 'Hello', overrides: Partial<UserMessage> = {}): UserMessage {
  return { id: uniqueId('message'), role: 'user', content: [{ type: 'text', text }], ...overrides };
}

/** An assistant message with one text part and a fresh id. */
export function makeAssistantMessage(
  text = 'Hi, how can I help?',
  overrides: Partial<AssistantMessage> = {},
): AssistantMessage {
  return { id: uniqueId('message'), role: 'assistant', content: [{ type: 'text', text }], ...overrides };
}

/** A tool message carrying one tool result. */
export function makeToolMessage(
  input: { toolCallId: string; toolName?: string; result?: ToolResult },
  overrides: Partial<ToolMessage> = {},
): ToolMessage {
  return {
    id: uniqueId('message'),
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: input.toolCallId,
        toolName: input.toolName ?? 'lookup',
        result: input.result ?? makeToolResult(),
      },
    ],
    ...overrides,
  };
}

/** A successful tool result. */
export function makeToolResult(data: ToolResult['data'] = { ok: true }): ToolResult {
  return { status: 'success', data };
}

/** A `running` run record of a thread, created now, with zero usage and empty state. */
export function makeRunRecord(
  input: { threadId: string; runId?: string; agentId?: string },
  overrides: Partial<RunRecord> = {},
): RunRecord {
  const now = Date.now();
  return {
    identity: {
      threadId: input.threadId,
      runId: input.runId ?? uniqueId('run'),
      agentId: input.agentId ?? 'assistant',
      origin: 'user',
    },
    status: 'running',
    steps: 0,
    usage: emptyUsage(),
    openTickets: [],
    state: {},
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
}

/** The input of `beginToolExecution` for one call of a run. */
export function makeBeginToolExecutionInput(
  input: { threadId: string; runId: string; toolCallId?: string; toolName?: string },
  overrides: Partial<BeginToolExecutionInput> = {},
): BeginToolExecutionInput {
  const toolCallId = input.toolCallId ?? uniqueId('call');
  return {
    threadId: input.threadId,
    runId: input.runId,
    toolCallId,
    toolName: input.toolName ?? 'lookup',
    idempotencyKey: `${input.runId}:${toolCallId}`,
    ...overrides,
  };
}

/** A ledger entry as `commit` accepts it in `toolExecutions`; `in-flight` unless overridden. */
export function makeToolExecution(
  input: { threadId: string; runId: string; toolCallId?: string; toolName?: string },
  overrides: Partial<ToolExecution> = {},
): ToolExecution {
  const toolCallId = input.toolCallId ?? uniqueId('call');
  return {
    runId: input.runId,
    toolCallId,
    threadId: input.threadId,
    toolName: input.toolName ?? 'lookup',
    idempotencyKey: `${input.runId}:${toolCallId}`,
    status: 'in-flight',
    attempts: 1,
    startedAt: Date.now(),
    ...overrides,
  };
}

/** Awaits `promise`, asserts it rejects with a LunationError of `code`, and returns that error. */
export async function expectLunationError(
  promise: Promise<unknown>,
  code: ErrorCode,
): Promise<LunationError> {
  let outcome: { resolved: true; value: unknown } | { resolved: false; error: unknown };
  try {
    outcome = { resolved: true, value: await promise };
  } catch (error) {
    outcome = { resolved: false, error };
  }
  if (outcome.resolved) {
    expect.fail(`expected a LunationError "${code}", but the call resolved with ${show(outcome.value)}`);
  }
  const { error } = outcome;
  if (!LunationError.isInstance(error)) {
    expect.fail(`expected a LunationError "${code}", but got ${show(error)}`);
  }
  expect(error.code, `error code (message: ${error.message})`).toBe(code);
  return error;
}

function show(value: unknown): string {
  if (value instanceof Error) return `${value.name}: ${value.message}`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
