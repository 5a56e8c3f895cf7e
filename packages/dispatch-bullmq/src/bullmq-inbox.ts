import type { InboxEntry, Submission, SubmitResult } from '@lunation/contract';
import { overloadedError } from '@lunation/contract/dispatch-utils';
import type { Queue } from 'bullmq';
import type { DispatchContext } from './dispatch-context.js';
import { dispatchScripts } from './dispatch-scripts.js';
import { jobIdOf } from './redis-keys.js';

/**
 * The producer side and the inboxes: each submission is one Lua script (dedupe, order, counters) and then one
 * BullMQ `add` of the thread's job (a no-op while the job exists).
 */
export class BullMQInbox {
  constructor(
    private readonly context: DispatchContext,
    private readonly queue: Queue,
  ) {}

  async submit(submission: Submission): Promise<SubmitResult> {
    const { keys, policy } = this.context;
    if (policy.maxDepth !== Number.POSITIVE_INFINITY) {
      const counts = await this.queue.getJobCounts('wait', 'prioritized', 'delayed');
      const depth = Object.values(counts).reduce((sum, count) => sum + count, 0);
      if (depth >= policy.maxDepth) throw overloadedError(depth, policy.maxDepth);
    }
    const now = this.context.clock.now();
    const { threadId } = submission;
    const entry: InboxEntry = { ...submission, submittedAt: now };
    const [outcome, dead] = (await this.context.run(
      dispatchScripts.submit,
      [
        keys.inbox(threadId),
        keys.entries(threadId),
        keys.tenants(threadId),
        keys.seen(threadId),
        keys.sequence,
        keys.pendingThreads,
        keys.stats,
        this.queue.toKey('failed'),
      ],
      [
        submission.id,
        JSON.stringify(entry),
        now,
        submission.resourceId ?? '',
        threadId,
        policy.dedupeWindowMs,
        jobIdOf(threadId),
      ],
    )) as [number, number];
    // A pending duplicate may be the retry of a submit that died before its `add`: wake the thread again (a
    // dead-lettered thread's job is in the failed set: the `add` is a no-op).
    if (outcome !== 0) await this.context.wake(threadId, submission.resourceId);
    return { duplicate: outcome !== 1, deadLettered: dead === 1 };
  }

  async pending(threadId: string): Promise<InboxEntry[]> {
    const { keys } = this.context;
    const entries = (await this.context.run(
      dispatchScripts.pending,
      [keys.inbox(threadId), keys.entries(threadId)],
      [],
    )) as (string | null)[];
    return entries.flatMap((json) => (json === null ? [] : [JSON.parse(json) as InboxEntry]));
  }

  async acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number> {
    if (submissionIds.length === 0) return 0;
    const { keys, policy } = this.context;
    return (await this.context.run(
      dispatchScripts.acknowledge,
      [
        keys.inbox(threadId),
        keys.entries(threadId),
        keys.tenants(threadId),
        keys.seen(threadId),
        keys.pendingThreads,
        keys.stats,
      ],
      [this.context.clock.now(), policy.dedupeWindowMs, threadId, ...submissionIds],
    )) as number;
  }
}
