import {
  type AgentEvent,
  type Clock,
  LunationError,
  type RunEventLog,
  systemClock,
} from '@lunation/contract';

type RunEndEvent = Extract<AgentEvent, { type: 'run-end' }>;

import type { UnnumberedEvent } from './missing-events.js';

/** What {@link EventPipe} takes. */
export interface EventPipeOptions {
  /**
   * The fencing token of the thread lease the events are produced under: the log refuses them once a newer lease
   * wrote to it (or after its end mark), and drops what it already has of a retried append.
   */
  fence?: number | undefined;
  /** How long appends may keep failing (retried with back-off) before the pipe gives up. @default 30000 */
  retryForMs?: number;
  /** Told of each append that failed (not of a refusal by a newer lease); it is retried as above. */
  onAppendFailed?(error: unknown): void;
  /** Where the retry back-off sleeps and the failing time is read. @default systemClock */
  clock?: Clock;
}

/** How a pipe ended. */
export type PipeOutcome =
  /** Every event is in the log. */
  | 'appended'
  /** The log refused the pipe's events: a newer lease writes to it now, or it ended. */
  | 'refused';

/**
 * Copies one run's events into its cross-process log, in order, one append in flight at a time: events that
 * arrive while an append is out go together in the next one, so a fast run costs few round trips.
 *
 * Each event goes to the log numbered by its place in the pipe (`seq` from 0), under the pipe's fence, so a
 * retried append is idempotent: the log keeps what it has and takes the rest. An append that fails is retried
 * with back-off (the run goes on meanwhile; its events wait in order) until it succeeds, the log refuses the
 * fence, or `retryForMs` passes.
 */
export class EventPipe {
  private batch: AgentEvent[] = [];
  private flushing: Promise<void> | undefined;
  private failure: unknown;
  private refused = false;
  private next = 0;
  private readonly fence: number | undefined;
  private readonly retryForMs: number;
  private readonly onAppendFailed: ((error: unknown) => void) | undefined;
  private readonly clock: Clock;

  constructor(
    private readonly log: RunEventLog,
    private readonly runId: string,
    options: EventPipeOptions = {},
  ) {
    this.fence = options.fence;
    this.retryForMs = options.retryForMs ?? 30_000;
    this.onAppendFailed = options.onAppendFailed;
    this.clock = options.clock ?? systemClock;
  }

  /** Queues an event; it is appended after every event queued before it. */
  push(event: AgentEvent | UnnumberedEvent): void {
    if (this.refused || this.failure !== undefined) return;
    this.batch.push({ ...event, seq: this.next++ } as AgentEvent);
    this.flushing ??= this.drain();
  }

  /** Resolves once every queued event is appended (or the log refused them); rejects when appends kept failing. */
  async flush(): Promise<PipeOutcome> {
    for (let current = this.flushing; current !== undefined; current = this.flushing) {
      await current;
      // A drain that ended before `push` stored its promise leaves it behind: it is done all the same.
      if (this.flushing === current) this.flushing = undefined;
    }
    if (this.failure !== undefined) throw this.failure;
    return this.refused ? 'refused' : 'appended';
  }

  private async drain(): Promise<void> {
    const options = this.fence === undefined ? undefined : { fence: this.fence };
    let failingSince: number | undefined;
    let attempt = 0;
    try {
      while (this.batch.length > 0 && !this.refused) {
        const events = this.batch;
        this.batch = [];
        try {
          await this.log.appendEvents(this.runId, events, options);
          failingSince = undefined;
          attempt = 0;
        } catch (error) {
          if (LunationError.hasCode(error, 'stale-lease')) {
            this.refused = true;
            this.batch = [];
            return;
          }
          this.onAppendFailed?.(error);
          failingSince = giveUpOrWait(error, failingSince, this.retryForMs, this.clock);
          this.batch = this.batch.length === 0 ? events : events.concat(this.batch);
          await this.clock.sleep(Math.min(1_000, 50 * 2 ** attempt++));
        }
      }
    } catch (error) {
      this.failure = error;
    } finally {
      this.flushing = undefined;
    }
  }
}

/**
 * Claims a run's log for a lease before its new holder reads what the log lacks: an append of no events under the
 * lease's fence, after which the log refuses appends from an older lease (a stalled previous holder's, still on
 * their way). Retried as a pipe's appends are; `refused` when a newer lease has the log already, or it ended.
 */
export async function claimLog(
  log: RunEventLog,
  runId: string,
  options: Pick<EventPipeOptions, 'fence' | 'retryForMs' | 'onAppendFailed' | 'clock'>,
): Promise<PipeOutcome> {
  if (options.fence === undefined) return 'appended';
  const retryForMs = options.retryForMs ?? 30_000;
  const clock = options.clock ?? systemClock;
  let failingSince: number | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      await log.appendEvents(runId, [], { fence: options.fence });
      return 'appended';
    } catch (error) {
      if (LunationError.hasCode(error, 'stale-lease')) return 'refused';
      options.onAppendFailed?.(error);
      failingSince = giveUpOrWait(error, failingSince, retryForMs, clock);
      await clock.sleep(Math.min(1_000, 50 * 2 ** attempt));
    }
  }
}

/** A run's stream piped into its log: the pipe (still open) and the run's `run-end`, held back. */
export interface PipedRun {
  pipe: EventPipe;
  /** The run's `run-end`: it reaches the log only once the store is known to have that ending. */
  end: RunEndEvent | undefined;
}

/**
 * Copies every event of `events` (a run's stream) into the log after `prefix`, but its `run-end`: a run's ending
 * goes to the log once its commit is known to have landed (an error ending may be one whose own commit failed,
 * and then the run goes on elsewhere). Resolves when the stream ends; the caller pushes the ending and flushes.
 */
export async function pipeEvents(
  log: RunEventLog,
  runId: string,
  events: AsyncIterable<AgentEvent>,
  options: EventPipeOptions & { prefix?: readonly UnnumberedEvent[] } = {},
): Promise<PipedRun> {
  const pipe = new EventPipe(log, runId, options);
  for (const event of options.prefix ?? []) pipe.push(event);
  let end: RunEndEvent | undefined;
  for await (const event of events) {
    if (event.type === 'run-end') end = event;
    else pipe.push(event);
  }
  return { pipe, end };
}

/**
 * After a failed append: rethrows `error` when it is not worth retrying or appends have failed for `retryForMs`
 * since `failingSince`; otherwise answers since when they have been failing.
 */
function giveUpOrWait(
  error: unknown,
  failingSince: number | undefined,
  retryForMs: number,
  clock: Clock,
): number {
  const now = clock.monotonic();
  const since = failingSince ?? now;
  if (!retryable(error) || now - since >= retryForMs) throw error;
  return since;
}

/** Failures worth retrying: the backend was unreachable or slow, not a refusal. */
function retryable(error: unknown): boolean {
  if (LunationError.isInstance(error)) return error.isRetryable;
  return true; // a driver's own error (a reset connection): the log is unreachable for now
}

/**
 * Marks a finished run's log ended under `fence`. `refused` when a newer lease holder claimed the log meanwhile
 * (it repairs the log and ends it): that is not this worker's failure, nor the submission's.
 */
export async function endLog(
  log: RunEventLog,
  runId: string,
  options: { ttlMs: number; fence: number | undefined },
): Promise<PipeOutcome> {
  const { ttlMs, fence } = options;
  try {
    await log.endEvents(runId, fence === undefined ? { ttlMs } : { ttlMs, fence });
    return 'appended';
  } catch (error) {
    if (LunationError.hasCode(error, 'stale-lease')) return 'refused';
    throw error;
  }
}
