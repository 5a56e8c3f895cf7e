import type { ChildProcess } from 'node:child_process';
import {
  type AcquireLeaseInput,
  type BeginToolExecutionInput,
  type CheckpointCommit,
  type CheckpointResult,
  type CompleteToolExecutionInput,
  type CreateThreadInput,
  type Lease,
  type ListMessagesOptions,
  type ListRunsOptions,
  type ListThreadsOptions,
  LunationError,
  type LunationStore,
  type MessageRecord,
  type Page,
  type ReleaseLeaseInput,
  type RenewLeaseInput,
  type RunRecord,
  type ThreadCheckpoint,
  type ThreadRecord,
  type ToolExecution,
} from '@lunation/contract';

/** The store methods a worker process calls on the kit's store, which lives in the test process. */
const methods = [
  'createThread',
  'getThread',
  'listThreads',
  'updateThreadMetadata',
  'deleteThread',
  'listMessages',
  'getRun',
  'getLatestRun',
  'listRuns',
  'getThreadState',
  'commit',
  'loadCheckpoint',
  'beginToolExecution',
  'completeToolExecution',
  'getToolExecution',
  'listToolExecutions',
  'acquireLease',
  'renewLease',
  'releaseLease',
  'getLease',
] as const;

type StoreMethod = (typeof methods)[number];

/** A store call from a worker process. */
interface StoreCall {
  kind: 'store-call';
  id: number;
  method: StoreMethod;
  args: unknown[];
}

/** An error as it crosses the process boundary. */
interface SentError {
  lunation: boolean;
  code?: string;
  message: string;
  retryable?: boolean;
  details?: Record<string, unknown>;
}

/** The answer to a {@link StoreCall}. */
type StoreAnswer =
  | { kind: 'store-result'; id: number; value: unknown }
  | { kind: 'store-error'; id: number; error: SentError };

function isStoreCall(message: unknown): message is StoreCall {
  return (
    typeof message === 'object' &&
    message !== null &&
    (message as { kind?: unknown }).kind === 'store-call' &&
    methods.includes((message as { method: StoreMethod }).method)
  );
}

/**
 * Answers a worker process's store calls from `store`, as a database server answers its clients: a call that
 * reached it completes even when the process that made it has died meanwhile. The child must have been spawned
 * with an IPC channel and `serialization: 'advanced'`.
 */
export function serveStore(store: LunationStore, child: ChildProcess): void {
  child.on('message', (message: unknown) => {
    if (!isStoreCall(message)) return;
    const call = store[message.method] as (...args: unknown[]) => Promise<unknown>;
    call.apply(store, message.args).then(
      (value) => answer(child, { kind: 'store-result', id: message.id, value }),
      (error: unknown) => answer(child, { kind: 'store-error', id: message.id, error: toSentError(error) }),
    );
  });
}

function answer(child: ChildProcess, message: StoreAnswer): void {
  if (!child.connected) return;
  child.send(message, (error) => {
    // The process died since it asked: nobody waits for the answer.
    if (error) return;
  });
}

function toSentError(error: unknown): SentError {
  if (LunationError.isInstance(error)) {
    return {
      lunation: true,
      code: error.code,
      message: error.message,
      retryable: error.isRetryable,
      ...(error.details === undefined ? {} : { details: error.details }),
    };
  }
  return { lunation: false, message: error instanceof Error ? error.message : String(error) };
}

function fromSentError(error: SentError): Error {
  if (!error.lunation || error.code === undefined) return new Error(error.message);
  return new LunationError(error.code as LunationError['code'], error.message, {
    ...(error.retryable === undefined ? {} : { retryable: error.retryable }),
    ...(error.details === undefined ? {} : { details: error.details }),
  });
}

/** The kit's store as a worker process sees it: every call goes to the test process over the IPC channel. */
export class RemoteStore implements LunationStore {
  readonly specificationVersion = 'v2' as const;
  readonly kind = 'kit-remote';
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve(value: unknown): void; reject(error: Error): void }>();

  constructor() {
    if (process.send === undefined) throw new Error('RemoteStore needs an IPC channel to the test process');
    process.on('message', (message: StoreAnswer) => {
      const waiter = this.waiting.get(message.id);
      if (waiter === undefined || (message.kind !== 'store-result' && message.kind !== 'store-error')) return;
      this.waiting.delete(message.id);
      if (message.kind === 'store-result') waiter.resolve(message.value);
      else waiter.reject(fromSentError(message.error));
    });
  }

  private call<T>(method: StoreMethod, ...args: unknown[]): Promise<T> {
    const id = ++this.nextId;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      process.send?.({ kind: 'store-call', id, method, args } satisfies StoreCall);
    });
  }

  createThread(input: CreateThreadInput): Promise<ThreadRecord> {
    return this.call('createThread', input);
  }
  getThread(threadId: string): Promise<ThreadRecord | undefined> {
    return this.call('getThread', threadId);
  }
  listThreads(options?: ListThreadsOptions): Promise<Page<ThreadRecord>> {
    return this.call('listThreads', options);
  }
  updateThreadMetadata(threadId: string, metadata: Record<string, unknown>): Promise<ThreadRecord> {
    return this.call('updateThreadMetadata', threadId, metadata);
  }
  deleteThread(threadId: string): Promise<boolean> {
    return this.call('deleteThread', threadId);
  }
  listMessages(threadId: string, options?: ListMessagesOptions): Promise<MessageRecord[]> {
    return this.call('listMessages', threadId, options);
  }
  getRun(runId: string): Promise<RunRecord | undefined> {
    return this.call('getRun', runId);
  }
  getLatestRun(threadId: string): Promise<RunRecord | undefined> {
    return this.call('getLatestRun', threadId);
  }
  listRuns(threadId: string, options?: ListRunsOptions): Promise<Page<RunRecord>> {
    return this.call('listRuns', threadId, options);
  }
  getThreadState(threadId: string): Promise<Record<string, unknown>> {
    return this.call('getThreadState', threadId);
  }
  commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    return this.call('commit', commit);
  }
  loadCheckpoint(threadId: string): Promise<ThreadCheckpoint | undefined> {
    return this.call('loadCheckpoint', threadId);
  }
  beginToolExecution(input: BeginToolExecutionInput): Promise<ToolExecution> {
    return this.call('beginToolExecution', input);
  }
  completeToolExecution(input: CompleteToolExecutionInput): Promise<ToolExecution> {
    return this.call('completeToolExecution', input);
  }
  getToolExecution(runId: string, toolCallId: string): Promise<ToolExecution | undefined> {
    return this.call('getToolExecution', runId, toolCallId);
  }
  listToolExecutions(runId: string): Promise<ToolExecution[]> {
    return this.call('listToolExecutions', runId);
  }
  acquireLease(input: AcquireLeaseInput): Promise<Lease> {
    return this.call('acquireLease', input);
  }
  renewLease(input: RenewLeaseInput): Promise<Lease> {
    return this.call('renewLease', input);
  }
  releaseLease(input: ReleaseLeaseInput): Promise<boolean> {
    return this.call('releaseLease', input);
  }
  getLease(threadId: string): Promise<Lease | undefined> {
    return this.call('getLease', threadId);
  }
  async close(): Promise<void> {}
}
