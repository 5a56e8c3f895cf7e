import { LunationError } from '../errors.js';
import type { BeginToolExecutionInput, CheckpointCommit } from '../store.js';

// Input checks every store makes the same way (ids, counts, page sizes, JSON).

/** Default page size of `listThreads` and `listRuns`. */
export const defaultPageLimit = 50;

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
}

/** Throws `invalid-argument` unless `value` is a non-empty string. */
export function assertId(value: unknown, name: string): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalid(`${name} must be a non-empty string, got ${describe(value)}`);
  }
}

/** Throws `invalid-argument` unless `value` is an integer >= `minimum`. */
export function assertInteger(value: unknown, name: string, minimum: number): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw invalid(`${name} must be an integer >= ${minimum}, got ${describe(value)}`);
  }
}

/** Throws `invalid-argument` unless `value` is a plain JSON object (not an array or null). */
export function assertObject(value: unknown, name: string): asserts value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid(`${name} must be a JSON object, got ${describe(value)}`);
  }
}

/** The page size to use; `invalid-argument` unless it is a positive integer. */
export function pageLimit(limit: number | undefined): number {
  if (limit === undefined) return defaultPageLimit;
  assertInteger(limit, 'limit', 1);
  return limit;
}

/** JSON text of `value`; `invalid-argument` when it cannot be serialised. */
export function toJsonText(value: unknown, name: string): string {
  try {
    const json = JSON.stringify(value);
    if (json === undefined) throw new TypeError('value is not JSON');
    return json;
  } catch (error) {
    throw new LunationError('invalid-argument', `${name} is not JSON-serialisable: ${String(error)}`, {
      cause: error,
    });
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return 'an array';
  return value === null ? 'null' : typeof value;
}

function invalidCommit(problem: string): LunationError {
  return new LunationError('invalid-argument', `Invalid commit: ${problem}`);
}

const messageRoles: ReadonlySet<unknown> = new Set(['system', 'user', 'assistant', 'tool']);

/**
 * The checks every store makes on a commit before writing anything: ids, counts, the lease token, that each
 * message is an object with a known `role` and a `content` array, that the run and ledger entries belong to
 * the commit's thread. Message parts and runs are not re-validated (the runtime builds them from the schemas).
 */
export function assertCheckpointCommit(commit: CheckpointCommit): void {
  const { threadId, run } = commit;
  assertId(threadId, 'threadId');
  assertInteger(commit.expectedMessageCount, 'expectedMessageCount', 0);
  if (commit.leaseToken !== undefined) assertInteger(commit.leaseToken, 'leaseToken', 1);
  if (!Array.isArray(commit.messages)) throw invalidCommit('messages must be an array');
  for (let index = 0; index < commit.messages.length; index++) {
    const message = commit.messages[index] as unknown;
    if (typeof message !== 'object' || message === null || Array.isArray(message)) {
      throw invalidCommit(`messages[${index}] must be a message object, got ${describe(message)}`);
    }
    const { role, content } = message as { role?: unknown; content?: unknown };
    if (!messageRoles.has(role)) {
      throw invalidCommit(
        `messages[${index}].role must be "system", "user", "assistant" or "tool", got ${describe(role)}`,
      );
    }
    if (!Array.isArray(content)) {
      throw invalidCommit(`messages[${index}].content must be an array of parts, got ${describe(content)}`);
    }
  }
  if (run !== undefined) {
    const runId = run.identity.runId;
    assertId(runId, 'run.identity.runId');
    if (run.identity.threadId !== threadId) {
      throw invalidCommit(`run "${runId}" belongs to thread "${run.identity.threadId}", not "${threadId}"`);
    }
    assertInteger(run.createdAt, 'run.createdAt', 0);
  }
  if (commit.runId !== undefined) assertId(commit.runId, 'runId');
  if (commit.threadState !== undefined) assertObject(commit.threadState, 'threadState');
  const executions = commit.toolExecutions;
  if (executions === undefined) return;
  if (!Array.isArray(executions)) throw invalidCommit('toolExecutions must be an array');
  for (let index = 0; index < executions.length; index++) {
    const execution = executions[index];
    if (typeof execution !== 'object' || execution === null) {
      throw invalidCommit(`toolExecutions[${index}] must be a ledger entry, got ${describe(execution)}`);
    }
    assertId(execution.runId, `toolExecutions[${index}].runId`);
    assertId(execution.toolCallId, `toolExecutions[${index}].toolCallId`);
    if (execution.threadId !== threadId) {
      throw invalidCommit(`toolExecutions[${index}] belongs to thread "${execution.threadId}"`);
    }
  }
}

/** `lease-lost` for a commit carrying a lease token above the thread's latest: a token that was never issued. */
export function unissuedLeaseToken(threadId: string, token: number, latestToken: number): LunationError {
  return new LunationError(
    'lease-lost',
    `Lease token ${token} of thread "${threadId}" was never issued (the latest is ${latestToken}); nothing was written, acquire the thread's lease and use its token`,
    { details: { threadId, token, latestToken } },
  );
}

/** `thread-busy` for a commit without a lease token while another writer holds the thread's live lease. */
export function leaseHeldElsewhere(threadId: string, details: Record<string, unknown> = {}): LunationError {
  return new LunationError(
    'thread-busy',
    `Thread "${threadId}" is leased by another writer, and this commit carries no lease token; nothing was written, acquire the lease (or wait for it to be released) and commit with its token`,
    { details: { threadId, ...details } },
  );
}

/** `invalid-argument` for a ledger entry that already belongs to another thread. */
export function ledgerEntryElsewhere(runId: string, toolCallId: string, owner: string): LunationError {
  return new LunationError(
    'invalid-argument',
    `Tool call "${toolCallId}" of run "${runId}" is already in the ledger of thread "${owner}"; a ledger entry never changes thread`,
    { details: { runId, toolCallId, threadId: owner } },
  );
}

/** The checks every store makes on `beginToolExecution` input. */
export function assertBeginToolExecution(input: BeginToolExecutionInput): void {
  assertId(input.runId, 'runId');
  assertId(input.toolCallId, 'toolCallId');
  assertId(input.threadId, 'threadId');
  assertId(input.toolName, 'toolName');
  assertId(input.idempotencyKey, 'idempotencyKey');
  if (input.leaseToken !== undefined) assertInteger(input.leaseToken, 'leaseToken', 1);
}

/**
 * The ledger entries of a commit as a store writes them: one per call (`runId`, `toolCallId`), the entries
 * applied in order so the later wins, except that the first `completed` entry is final. Order follows each
 * call's first entry. A store still keeps an entry it already holds as `completed`.
 */
export function ledgerEntriesToWrite<Entry extends { runId: string; toolCallId: string; status: string }>(
  entries: readonly Entry[],
): Entry[] {
  if (entries.length < 2) return [...entries];
  const byCall = new Map<string, Entry>();
  for (const entry of entries) {
    const key = JSON.stringify([entry.runId, entry.toolCallId]);
    if (byCall.get(key)?.status !== 'completed') byCall.set(key, entry);
  }
  return [...byCall.values()];
}
