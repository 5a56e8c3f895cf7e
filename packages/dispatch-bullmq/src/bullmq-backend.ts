import {
  type AgentEvent,
  type CancelRequest,
  type CancelRequestInput,
  type CancelWatch,
  type ClockTimer,
  type CompleteResult,
  type DeadLetter,
  type DispatchClaim,
  type DispatchDepth,
  type FailOptions,
  type FailResult,
  type InboxEntry,
  LunationError,
  type RunEventPage,
  type RunEventRecord,
  type Submission,
  type SubmitResult,
  systemClock,
  systemIds,
} from '@lunation/contract';
import {
  type CheckedClaimOptions,
  type DispatchBackend,
  dispatchRetryDelay,
  resolveDispatchPolicy,
} from '@lunation/contract/dispatch-utils';
import { Queue, type RedisOptions, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { BullMQAdmin } from './bullmq-admin.js';
import { BullMQClaims, type ThreadJobData } from './bullmq-claims.js';
import { type BullMQDispatcherOptions, resolveSettings } from './bullmq-dispatcher-options.js';
import { BullMQInbox } from './bullmq-inbox.js';
import type { DispatchContext } from './dispatch-context.js';
import { RedisCancels } from './redis-cancels.js';
import { DispatchKeys, jobIdOf } from './redis-keys.js';
import { RedisRunEvents } from './redis-run-events.js';
import { runScript } from './script-runner.js';
import { StreamWaiter } from './stream-waiter.js';
import { toDispatchError } from './to-dispatch-error.js';

/** Acknowledged submission ids count as duplicates this long, by default. */
const defaultDedupeWindowMs = 24 * 3_600_000;

/**
 * The operations of `BullMQDispatcher`: one BullMQ job per thread with work, claimed by hand (a Worker without a
 * processor); inboxes, tenant slots, counters, cancel requests and run event streams in Redis next to it.
 * `CheckedDispatcher` checks their arguments and the closed state first.
 */
export class BullMQBackend implements DispatchBackend {
  readonly kind = 'bullmq';
  private readonly client: Redis;
  private readonly ownedClient: Redis | undefined;
  private readonly queue: Queue;
  private readonly context: DispatchContext;
  private readonly inbox: BullMQInbox;
  private readonly admin: BullMQAdmin;
  private readonly cancels: RedisCancels;
  private readonly events: RedisRunEvents;
  private readonly subscriptions = new Set<AbortController>();
  private claims: BullMQClaims | undefined;
  private worker: Worker | undefined;
  private waiter: StreamWaiter | undefined;
  private sweepTimer: ClockTimer | undefined;
  private lastConnectionError: unknown;
  private closed = false;

  constructor(options: BullMQDispatcherOptions = {}) {
    const policy = resolveDispatchPolicy(options, { dedupeWindowMs: defaultDedupeWindowMs });
    const settings = resolveSettings(options);
    const keyPrefix = options.keyPrefix ?? 'lunation:dispatch:';
    if (typeof keyPrefix !== 'string') throw invalid(`keyPrefix must be a string, got ${typeof keyPrefix}`);
    const queueName = options.queueName ?? 'threads';
    if (typeof queueName !== 'string' || queueName.length === 0 || queueName.includes(':')) {
      throw invalid(`queueName must be a non-empty string without ":", got ${JSON.stringify(queueName)}`);
    }
    if ('client' in options) {
      if (options.client.options?.keyPrefix) {
        throw invalid(
          `The injected Redis client has keyPrefix "${options.client.options.keyPrefix}", which Lua scripts and BullMQ do not see; pass keyPrefix to BullMQDispatcher instead`,
        );
      }
      this.client = options.client;
    } else {
      this.ownedClient = new Redis(options.url ?? 'redis://127.0.0.1:6379', {
        maxRetriesPerRequest: 1,
        connectTimeout: 5_000,
      });
      this.client = this.ownedClient;
    }
    const reportError = options.onError ?? (() => {});
    this.client.on('error', (error: unknown) => {
      this.lastConnectionError = error;
      reportError(error);
    });
    this.client.on('ready', () => {
      this.lastConnectionError = undefined;
    });
    const keys = new DispatchKeys(keyPrefix);
    this.queue = new Queue(queueName, { connection: this.client, prefix: keys.bullPrefix });
    this.queue.on('error', reportError);
    const queue = this.queue;
    const clock = options.clock ?? systemClock;
    this.context = {
      client: this.client,
      keys,
      policy,
      settings,
      clock,
      ids: options.ids ?? systemIds,
      run: (script, scriptKeys, args) => runScript(this.client, script, scriptKeys, args),
      async wake(threadId, resourceId) {
        const data: ThreadJobData = resourceId === undefined ? { threadId } : { threadId, resourceId };
        await queue.add('thread', data, {
          jobId: jobIdOf(threadId),
          attempts: policy.maxAttempts,
          backoff: { type: 'lunation' },
          removeOnComplete: true,
          removeOnFail: false,
        });
      },
      reportError,
    };
    this.inbox = new BullMQInbox(this.context, this.queue);
    this.admin = new BullMQAdmin(this.context, this.queue);
    this.cancels = new RedisCancels(this.context);
    this.events = new RedisRunEvents(this.context, () => {
      this.waiter ??= new StreamWaiter(this.client, { blockMs: settings.blockMs, clock }, reportError);
      return this.waiter;
    });
  }

  submit(submission: Submission): Promise<SubmitResult> {
    return this.inbox.submit(submission);
  }

  claim(options: CheckedClaimOptions): Promise<DispatchClaim | undefined> {
    return this.workSide().claim(options, options.lockMs ?? this.context.settings.lockMs, options.waitMs);
  }

  extend(claim: DispatchClaim, lockMs: number | undefined): Promise<void> {
    return this.workSide().extend(claim, lockMs);
  }

  pending(threadId: string): Promise<InboxEntry[]> {
    return this.inbox.pending(threadId);
  }

  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    return this.inbox.acknowledge(threadId, submissionIds);
  }

  complete(claim: DispatchClaim): Promise<CompleteResult> {
    return this.workSide().complete(claim);
  }

  fail(claim: DispatchClaim, error: unknown, options: FailOptions): Promise<FailResult> {
    return this.workSide().fail(claim, error, options);
  }

  handBack(claim: DispatchClaim, delayMs: number): Promise<void> {
    return this.workSide().handBack(claim, delayMs);
  }

  depth(): Promise<DispatchDepth> {
    return this.admin.depth();
  }

  deadLetters(limit: number): Promise<DeadLetter[]> {
    return this.admin.deadLetters(limit);
  }

  resubmit(threadId: string): Promise<boolean> {
    return this.admin.resubmit(threadId);
  }

  requestCancel(input: CancelRequestInput): Promise<CancelRequest> {
    return this.cancels.request(input);
  }

  cancelRequests(threadId: string): Promise<CancelRequest[]> {
    return this.cancels.list(threadId);
  }

  watchCancel(threadId: string, listener: (request: CancelRequest) => void): Promise<CancelWatch> {
    return this.cancels.watch(threadId, listener);
  }

  clearCancel(threadId: string, requestId: string | undefined): Promise<boolean> {
    return this.cancels.clear(threadId, requestId);
  }

  appendEvents(runId: string, events: readonly AgentEvent[], fence: number | undefined): Promise<string[]> {
    return this.events.append(runId, events, fence);
  }

  readEvents(runId: string, after: number, limit: number): Promise<RunEventPage> {
    return this.events.read(runId, after, limit);
  }

  subscribeEvents(runId: string, after: number, signal: AbortSignal): AsyncIterable<RunEventRecord> {
    // Its own controller, aborted by the caller's signal or by close(); forgotten once the subscription ends.
    const controller = new AbortController();
    const subscriptions = this.subscriptions;
    const end = () => {
      signal.removeEventListener('abort', stop);
      subscriptions.delete(controller);
    };
    const stop = () => {
      controller.abort();
      end();
    };
    if (signal.aborted) controller.abort();
    else signal.addEventListener('abort', stop, { once: true });
    subscriptions.add(controller);
    const records = this.events.subscribe(runId, after, controller.signal);
    const wrap = (error: unknown) => toDispatchError(error, 'subscribeEvents', this.lastConnectionError);
    return {
      [Symbol.asyncIterator]: () => ({
        next: () =>
          records.next().then(
            (result) => {
              if (result.done) end();
              return result;
            },
            (error: unknown) => {
              end();
              return Promise.reject(wrap(error));
            },
          ),
        return: () => {
          end();
          return records.return(undefined);
        },
      }),
    };
  }

  endEvents(runId: string, ttlMs: number, fence: number | undefined): Promise<void> {
    return this.events.end(runId, ttlMs, fence);
  }

  toDispatchError(error: unknown, operation: string): LunationError {
    return toDispatchError(error, operation, this.lastConnectionError);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const controller of [...this.subscriptions]) controller.abort();
    this.context.clock.clearInterval(this.sweepTimer);
    await this.claims?.close();
    this.waiter?.close();
    await this.cancels.close();
    await this.worker?.close().catch(() => undefined);
    await this.queue.close().catch(() => undefined);
    const client = this.ownedClient;
    if (client !== undefined) {
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    }
  }

  /** The worker side, started at the first claim: a BullMQ Worker, its lost-claim checks and the orphan sweep. */
  private workSide(): BullMQClaims {
    if (this.claims !== undefined) return this.claims;
    const { keys, policy, settings } = this.context;
    const worker = new Worker(this.queue.name, null, {
      // Options, not a client: BullMQ opens the worker's connections itself. They wait for Redis to come back
      // (`maxRetriesPerRequest: null`, as BullMQ wants for workers); the claims bound every call they make.
      connection: { ...(this.client.options as RedisOptions), maxRetriesPerRequest: null },
      prefix: keys.bullPrefix,
      autorun: false,
      lockDuration: settings.lockMs,
      stalledInterval: settings.stalledIntervalMs,
      // A lost claim is never a failure: however often a job stalls, BullMQ's check puts it back in line.
      maxStalledCount: Number.MAX_SAFE_INTEGER,
      drainDelay: settings.blockMs / 1_000,
      settings: {
        backoffStrategy: (attemptsMade: number) => dispatchRetryDelay(policy.backoff, attemptsMade),
      },
    });
    this.worker = worker;
    worker.on('error', this.context.reportError);
    const ready = (async () => {
      await worker.waitUntilReady();
      if (this.closed) return;
      await worker.startStalledCheckTimer();
      this.sweepTimer = this.context.clock
        .setInterval(() => {
          this.admin.sweep().catch(this.context.reportError);
        }, settings.sweepIntervalMs)
        .unref();
    })();
    ready.catch(this.context.reportError);
    this.claims = new BullMQClaims(this.context, worker, ready);
    return this.claims;
  }
}

function invalid(message: string): LunationError {
  return new LunationError('invalid-argument', message);
}
