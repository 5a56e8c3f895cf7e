import type { DeadLetter, DispatchDepth, ErrorInfo, ResourceDepth } from '@lunation/contract';
import { Job, type Queue } from 'bullmq';
import type { ThreadJobData } from './bullmq-claims.js';
import type { DispatchContext } from './dispatch-context.js';
import { dispatchScripts } from './dispatch-scripts.js';
import { jobIdOf } from './redis-keys.js';

/** How many threads one orphan sweep looks at. */
const sweepBatch = 100;

/**
 * Figures, dead letters and the orphan sweep. Thread states come from BullMQ's counts; pending submissions,
 * completed and failed totals and every per-tenant figure from the dispatcher's own counters.
 */
export class BullMQAdmin {
  constructor(
    private readonly context: DispatchContext,
    private readonly queue: Queue,
  ) {}

  async depth(): Promise<DispatchDepth> {
    const { keys } = this.context;
    const [counts, [stats, active]] = await Promise.all([
      this.queue.getJobCounts('wait', 'prioritized', 'active', 'delayed', 'failed'),
      this.context.run(
        dispatchScripts.figures,
        [keys.stats, keys.activeTenants],
        [this.context.clock.now()],
      ) as Promise<[string[], (string | number)[]]>,
    ]);
    const counters = new Map<string, number>();
    for (let index = 0; index < stats.length; index += 2) {
      counters.set(stats[index] as string, Number(stats[index + 1]));
    }
    const byResource: Record<string, ResourceDepth> = {};
    const resource = (resourceId: string): ResourceDepth => {
      byResource[resourceId] ??= { pending: 0, active: 0, deadLettered: 0 };
      return byResource[resourceId];
    };
    for (const [field, value] of counters) {
      if (value <= 0) continue;
      if (field.startsWith('pending:')) resource(field.slice('pending:'.length)).pending = value;
      else if (field.startsWith('dead:')) resource(field.slice('dead:'.length)).deadLettered = value;
    }
    for (let index = 0; index < active.length; index += 2) {
      resource(String(active[index])).active = Number(active[index + 1]);
    }
    const count = (type: string) => counts[type] ?? 0;
    return {
      waiting: count('wait') + count('prioritized'),
      active: count('active'),
      delayed: count('delayed'),
      deadLettered: count('failed'),
      pending: counters.get('pending') ?? 0,
      completed: counters.get('completed') ?? 0,
      failed: counters.get('failed') ?? 0,
      byResource,
    };
  }

  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const jobs = (await this.queue.getJobs(['failed'], 0, limit - 1, true)) as Job[];
    const pipeline = this.context.client.pipeline();
    for (const job of jobs) pipeline.zcard(this.context.keys.inbox((job.data as ThreadJobData).threadId));
    const sizes = (await pipeline.exec()) ?? [];
    return jobs.map((job, index) => {
      const data = job.data as ThreadJobData;
      return {
        threadId: data.threadId,
        ...(data.resourceId === undefined ? {} : { resourceId: data.resourceId }),
        attempts: Math.max(1, job.attemptsMade),
        error: errorInfoOf(job.failedReason),
        deadLetteredAt: job.finishedOn ?? job.timestamp,
        pending: Number(sizes[index]?.[1] ?? 0),
      };
    });
  }

  async resubmit(threadId: string): Promise<boolean> {
    const jobId = jobIdOf(threadId);
    const job = await Job.fromId(this.queue, jobId);
    if (job === undefined || (await job.getState()) !== 'failed') return false;
    // A fresh count of lost claims too, not only of attempts.
    await this.context.client.hset(this.queue.toKey(jobId), 'stc', 0);
    try {
      await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    } catch (error) {
      if ((error as { code?: unknown }).code === -3 || (error as { code?: unknown }).code === -1)
        return false;
      throw error;
    }
    const { resourceId } = job.data as ThreadJobData;
    if (resourceId !== undefined)
      await this.context.run(dispatchScripts.undead, [this.context.keys.stats], [resourceId]);
    return true;
  }

  /**
   * Wakes threads whose submissions have no job: a submitter or a completing worker that died between its inbox
   * write and its BullMQ `add`. Threads that have a job are looked at again only after another interval.
   */
  async sweep(): Promise<void> {
    const { client, keys, settings } = this.context;
    const now = this.context.clock.now();
    const threads = await client.zrangebyscore(
      keys.pendingThreads,
      '-inf',
      now - settings.sweepIntervalMs,
      'LIMIT',
      0,
      sweepBatch,
    );
    for (const threadId of threads) {
      const state = await this.queue.getJobState(jobIdOf(threadId));
      if (state !== 'unknown') {
        await client.zadd(keys.pendingThreads, 'XX', now, threadId);
        continue;
      }
      const first = await client.zrange(keys.inbox(threadId), 0, 0);
      if (first[0] === undefined) {
        await client.zrem(keys.pendingThreads, threadId);
        continue;
      }
      const tenant = await client.hget(keys.tenants(threadId), first[0]);
      await this.context.wake(threadId, tenant ?? undefined);
    }
  }
}

/** The ErrorInfo a dead letter's failure carried (as JSON), or an `internal` one for any other reason. */
function errorInfoOf(reason: string | undefined): ErrorInfo {
  try {
    const info = JSON.parse(reason ?? '') as ErrorInfo;
    if (typeof info?.code === 'string' && typeof info.message === 'string') return info;
  } catch {
    // Not written by the dispatcher: BullMQ's own reason.
  }
  return { code: 'internal', message: reason ?? 'unknown failure', retryable: false };
}
