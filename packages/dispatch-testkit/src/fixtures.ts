import {
  type AgentEvent,
  type ErrorCode,
  LunationError,
  type RunEventRecord,
  type Submission,
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

/** An input submission of one user message to `threadId`, with a fresh id unless given. */
export function makeSubmission(
  threadId: string,
  options: { id?: string; resourceId?: string; text?: string } = {},
): Submission {
  return {
    id: options.id ?? uniqueId('submission'),
    threadId,
    ...(options.resourceId === undefined ? {} : { resourceId: options.resourceId }),
    request: {
      type: 'input',
      input: [
        { id: uniqueId('message'), role: 'user', content: [{ type: 'text', text: options.text ?? 'Hello' }] },
      ],
    },
  };
}

/** A decisions submission answering one ticket. */
export function makeDecisionsSubmission(threadId: string, ticketId = 'ticket-1'): Submission {
  return {
    id: uniqueId('submission'),
    threadId,
    request: {
      type: 'decisions',
      decisions: [
        { decisionId: uniqueId('decision'), ticketId, action: 'resume', payload: { approved: true } },
      ],
    },
  };
}

/** A `text-delta` event of a run, with `seq` and a delta naming it. */
export function makeEvent(runId: string, seq: number): AgentEvent {
  return {
    type: 'text-delta',
    identity: { threadId: `thread-of-${runId}`, runId, agentId: 'assistant', origin: 'user' },
    seq,
    step: 0,
    delta: `delta ${seq}`,
  };
}

/** `count` events of a run, numbered from `from`. */
export function makeEvents(runId: string, count: number, from = 0): AgentEvent[] {
  return Array.from({ length: count }, (_, index) => makeEvent(runId, from + index));
}

/**
 * Collects a subscription until it ends; fails when it has not ended after `timeoutMs` (then returns what it
 * got, aborting through `abort`).
 */
export async function collect(
  iterable: AsyncIterable<RunEventRecord>,
  options: { timeoutMs: number; abort?: AbortController; onRecord?(record: RunEventRecord): void },
): Promise<RunEventRecord[]> {
  const records: RunEventRecord[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      options.abort?.abort();
      resolve('timeout');
    }, options.timeoutMs);
  });
  const drain = (async () => {
    for await (const record of iterable) {
      records.push(record);
      options.onRecord?.(record);
    }
    return 'ended' as const;
  })();
  const outcome = await Promise.race([drain, timeout]);
  clearTimeout(timer);
  expect(
    timedOut ? 'timeout' : outcome,
    `the subscription ended within ${options.timeoutMs} ms (got ${records.length} events)`,
  ).toBe('ended');
  return records;
}

/** Polls `condition` every 10 ms until it holds; fails after `timeoutMs`. */
export async function eventually(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) expect.fail(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
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
  if (!LunationError.isInstance(error))
    expect.fail(`expected a LunationError "${code}", but got ${show(error)}`);
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
