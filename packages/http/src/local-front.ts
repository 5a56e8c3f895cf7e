import { randomUUID } from 'node:crypto';
import { LunationError, type Message, type ResumeDecision } from '@lunation/contract';
import type { AgentRuntime, RunHandle } from '@lunation/runtime';
import type { FrontAnswer, FrontRequest, FrontSendOptions, RunFront, RunStream } from './front.js';
import { HttpError, noThread } from './http-error.js';
import { type LocalRunLog, LocalRunLogs } from './local-run-log.js';
import { threadCaller } from './token-auth.js';

/** Options of {@link LocalFront}. */
export interface LocalFrontOptions {
  /** How long a finished run's events stay here for reconnecting clients. @default 300000 (5 minutes) */
  retainMs?: number;
}

/**
 * Runs threads in this process on an `AgentRuntime`. Each run's events are logged here with ids, so a client
 * that drops its stream reconnects with `Last-Event-ID` while the run is active (and a few minutes after);
 * closing a stream only detaches. `close()` cancels what runs (each run ends cleanly, checkpointed).
 */
export class LocalFront implements RunFront {
  private closing = false;
  private readonly logs: LocalRunLogs;
  private readonly readers = new Set<AbortController>();
  /** Prefixes the event ids of adopted runs: this process's, unlike any id their logs had before. */
  private readonly adoptedPrefix = `${randomUUID().slice(0, 8)}.`;

  constructor(
    private readonly runtime: AgentRuntime,
    options: LocalFrontOptions = {},
  ) {
    this.logs = new LocalRunLogs(options.retainMs ?? 300_000);
  }

  async send(
    { threadId, resource }: FrontRequest,
    text: string,
    options: FrontSendOptions = {},
  ): Promise<RunStream> {
    const { runId } = options;
    const retried = runId === undefined ? undefined : this.logs.get(runId);
    // A retried send of a run this process streams: the client gets the same run, not a second one.
    if (retried?.threadId === threadId) return this.read(retried, positionAfter(retried, undefined));
    const run = await this.runtime.run({
      threadId,
      input: text,
      resourceId: resource,
      ...(runId === undefined ? {} : { runId }),
    });
    return this.start(run);
  }

  async continueRun({ threadId, resource }: FrontRequest, runId: string): Promise<RunStream> {
    // Without input, a run of a thread whose latest run is `running` continues that run (keeping its id).
    const run = await this.runtime.run({ threadId, resourceId: resource });
    if (run.runId !== runId) {
      run.cancel('not the run asked to continue');
      throw new HttpError(
        409,
        'store-conflict',
        `Thread "${threadId}" did not continue run "${runId}" (its latest run is "${run.runId}")`,
      );
    }
    return this.start(run);
  }

  async decide(
    { threadId, resource }: FrontRequest,
    decisions: ResumeDecision[],
  ): Promise<RunStream | FrontAnswer> {
    // The runtime checks the owner on the thread it loads: an unowned thread is only the local caller's.
    const outcome = await this.runtime
      .sendDecisions({ threadId }, decisions, threadCaller(resource))
      .catch((error: unknown) => {
        throw LunationError.hasCode(error, 'not-found') ? noThread(threadId) : error;
      });
    if (outcome.run) return this.start(outcome.run);
    const { applied, ignored, openTickets } = outcome;
    return { status: 200, body: { applied, ignored, openTickets } };
  }

  async cancel({ threadId }: FrontRequest, runId?: string): Promise<FrontAnswer> {
    // A cancel naming a run that is not the thread's active one (it ended) cancels nothing.
    if (runId !== undefined && this.runtime.activeRun(threadId)?.runId !== runId) {
      return { status: 200, body: { cancelled: false, runId } };
    }
    return { status: 200, body: { cancelled: this.runtime.cancel(threadId, 'cancelled by the client') } };
  }

  async follow(request: FrontRequest, runId: string, lastEventId: string | undefined): Promise<RunStream> {
    const log = this.logs.get(runId);
    if (log?.threadId !== request.threadId) {
      throw new HttpError(
        404,
        'not-found',
        `Thread "${request.threadId}" has no run "${runId}" streaming in this process (a finished run's events are kept a few minutes; a fleet keeps them across servers)`,
      );
    }
    return this.read(log, positionAfter(log, lastEventId));
  }

  async active({ threadId }: FrontRequest): Promise<RunStream | undefined> {
    const log = this.logs.active(threadId);
    if (!log) return undefined;
    return { ...this.read(log, log.invocationStart), earlier: log.records.slice(0, log.invocationStart) };
  }

  async activeInput({ threadId }: FrontRequest): Promise<Message[]> {
    const log = this.logs.active(threadId);
    const start = log?.records[log.invocationStart]?.event;
    return start?.type === 'run-start' ? start.input : [];
  }

  /**
   * Logs the events of a run started outside the API (e.g. one `runtime.resumeCutOffRuns()` continued at start),
   * so clients see it as the thread's active run and can follow it. Its event ids carry a prefix of this process:
   * a client reconnecting with an id of the log the run had before the restart gets this log from its start.
   */
  adopt(run: RunHandle): void {
    if (this.closing) run.cancel('the server is shutting down');
    this.logs.record(run, this.adoptedPrefix);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.runtime.cancelAll('the server is shutting down');
    for (const reader of this.readers) reader.abort();
  }

  private start(run: RunHandle): RunStream {
    if (this.closing) run.cancel('the server is shutting down');
    const log = this.logs.record(run);
    return this.read(log, log.records.length);
  }

  private read(log: LocalRunLog, after: number): RunStream {
    const reader = new AbortController();
    this.readers.add(reader);
    const readers = this.readers;
    return {
      runId: log.runId,
      records: (async function* () {
        try {
          yield* log.read(after, reader.signal);
        } finally {
          readers.delete(reader);
        }
      })(),
      detach: () => reader.abort(),
    };
  }
}

/** Where in `log` a client that saw `lastEventId` continues; an id of another process's log starts it over. */
function positionAfter(log: LocalRunLog, lastEventId: string | undefined): number {
  if (lastEventId === undefined) return 0;
  const own = log.idPrefix !== '' && lastEventId.startsWith(log.idPrefix);
  const position = own ? lastEventId.slice(log.idPrefix.length) : lastEventId;
  const after = Number(position);
  if (!Number.isSafeInteger(after) || after < 0 || !/^(0|[1-9][0-9]*)$/.test(position)) {
    throw new HttpError(
      400,
      'invalid-argument',
      `Last-Event-ID "${lastEventId}" is not an event id of this API`,
    );
  }
  // An id of the run's log in the process that died: this log holds only the continuation.
  return log.idPrefix !== '' && !own ? 0 : after;
}
