/** Deliberate bugs, one per entry, that the dispatcher conformance kit must catch (see `local-dispatcher.mutation.test.ts`). */
import type {
  DispatchClaim,
  DispatchPolicy,
  RunEventRecord,
  SubscribeEventsOptions,
} from '@lunation/contract';
import { LocalDispatcher, type LocalDispatcherOptions } from '@lunation/fleet';

/** Builds a broken LocalDispatcher from the options the kit asks for. */
type Breakage = (options: LocalDispatcherOptions) => LocalDispatcher;

/** A LocalDispatcher with one behaviour broken in place. */
function broken(
  options: LocalDispatcherOptions,
  breakIt: (dispatcher: LocalDispatcher) => void,
): LocalDispatcher {
  const dispatcher = new LocalDispatcher(options);
  breakIt(dispatcher);
  return dispatcher;
}

/** A dispatcher whose policy lost one setting. */
function without(options: LocalDispatcherOptions, change: Partial<DispatchPolicy>): LocalDispatcher {
  return new LocalDispatcher({ ...options, ...change });
}

/** Each entry breaks one rule of the contract. */
export const breakages: Record<string, Breakage> = {
  'acknowledges what it delivers (forgets to redeliver)': (options) =>
    broken(options, (dispatcher) => {
      const pending = dispatcher.pending.bind(dispatcher);
      dispatcher.pending = async (threadId) => {
        const entries = await pending(threadId);
        await dispatcher.acknowledge(
          threadId,
          entries.map((entry) => entry.id),
        );
        return entries;
      };
    }),
  'redelivers the inbox newest first': (options) =>
    broken(options, (dispatcher) => {
      const pending = dispatcher.pending.bind(dispatcher);
      dispatcher.pending = async (threadId) => (await pending(threadId)).reverse();
    }),
  'hands a claimed thread to a second worker': (options) =>
    broken(options, (dispatcher) => {
      const claim = dispatcher.claim.bind(dispatcher);
      const held: DispatchClaim[] = [];
      dispatcher.claim = async (claimOptions) => {
        const claimed = await claim({ ...claimOptions, waitMs: 0 });
        if (claimed !== undefined) {
          held.push(claimed);
          return claimed;
        }
        const twice = held.at(-1);
        if (twice !== undefined) return { ...twice, workerId: claimOptions.workerId };
        return claim(claimOptions);
      };
    }),
  'never lets a lock expire': (options) =>
    broken(options, (dispatcher) => {
      const claim = dispatcher.claim.bind(dispatcher);
      dispatcher.claim = (claimOptions) => claim({ ...claimOptions, lockMs: 24 * 3_600_000 });
      const extend = dispatcher.extend.bind(dispatcher);
      dispatcher.extend = (held) => extend(held, 24 * 3_600_000);
    }),
  "extends a claim by the dispatcher's default lock, not the claim's own, when given no lockMs": (options) =>
    broken(options, (dispatcher) => {
      const extend = dispatcher.extend.bind(dispatcher);
      dispatcher.extend = (held, lockMs) => extend(held, lockMs ?? 30_000);
    }),
  "extends a claim by a short default lock, not the claim's own, when given no lockMs": (options) =>
    broken(options, (dispatcher) => {
      const extend = dispatcher.extend.bind(dispatcher);
      dispatcher.extend = (held, lockMs) => extend(held, lockMs ?? 500);
    }),
  'drops the re-wake when submissions arrived during the claim': (options) =>
    broken(options, (dispatcher) => {
      const complete = dispatcher.complete.bind(dispatcher);
      dispatcher.complete = async (claim) => {
        if ((await dispatcher.pending(claim.threadId)).length === 0) return complete(claim);
        await dispatcher.handBack(claim, { delayMs: 3_600_000 });
        return { rewoken: false };
      };
    }),
  'dead-letters without retrying': (options) =>
    broken(options, (dispatcher) => {
      const fail = dispatcher.fail.bind(dispatcher);
      dispatcher.fail = (claim, error) => fail(claim, error, { retryable: false });
    }),
  'retries without backoff': (options) => without(options, { backoff: { initialMs: 0, maxMs: 0 } }),
  'counts hand-backs as failures': (options) =>
    broken(options, (dispatcher) => {
      dispatcher.handBack = async (claim) => {
        await dispatcher.fail(claim, new Error('handed back'), { retryable: true });
      };
    }),
  'forgets acknowledged ids at once': (options) => without(options, { dedupeWindowMs: 0 }),
  'ignores the dedupe window it is given (keeps its default)': (options) =>
    without(options, { dedupeWindowMs: undefined }),
  'counts the dedupe window from the submission, not the acknowledgement': (options) =>
    broken(options, (dispatcher) => {
      const windowMs = options.dedupeWindowMs ?? 600_000;
      dispatcher.acknowledge = async (threadId, ids) => {
        const entries = (await dispatcher.pending(threadId)).filter((entry) => ids.includes(entry.id));
        const submittedAt = Math.min(Date.now(), ...entries.map((entry) => entry.submittedAt));
        return dispatcher.backend.work.acknowledge(threadId, ids, submittedAt, windowMs);
      };
    }),
  'ignores the depth cap': (options) => without(options, { maxDepth: undefined }),
  'ignores the per-tenant cap': (options) => without(options, { maxActivePerResource: undefined }),
  'tells cancel watchers nothing': (options) =>
    broken(options, (dispatcher) => {
      const watchCancel = dispatcher.watchCancel.bind(dispatcher);
      dispatcher.watchCancel = (threadId) => watchCancel(threadId, () => {});
    }),
  "keeps one cancel request per thread (a newer one replaces another run's)": (options) =>
    broken(options, (dispatcher) => {
      const requestCancel = dispatcher.requestCancel.bind(dispatcher);
      dispatcher.requestCancel = async (input) => {
        if (input.threadId) await dispatcher.clearCancel(input.threadId);
        return requestCancel(input);
      };
    }),
  'reorders each appended batch of events': (options) =>
    broken(options, (dispatcher) => {
      const appendEvents = dispatcher.appendEvents.bind(dispatcher);
      dispatcher.appendEvents = async (runId, events) =>
        (await appendEvents(runId, [...events].reverse())).reverse();
    }),
  'ends subscriptions when they catch up, before the end mark': (options) =>
    broken(options, (dispatcher) => {
      const subscribeEvents = dispatcher.subscribeEvents.bind(dispatcher);
      dispatcher.subscribeEvents = (runId: string, subscribeOptions: SubscribeEventsOptions) =>
        (async function* (): AsyncGenerator<RunEventRecord> {
          for await (const record of subscribeEvents(runId, subscribeOptions)) {
            yield record;
            if ((await dispatcher.readEvents(runId, { after: record.id })).events.length === 0) return;
          }
        })();
    }),
  'skips the first event after the id a subscription resumes from': (options) =>
    broken(options, (dispatcher) => {
      const subscribeEvents = dispatcher.subscribeEvents.bind(dispatcher);
      dispatcher.subscribeEvents = (runId: string, subscribeOptions: SubscribeEventsOptions) =>
        (async function* (): AsyncGenerator<RunEventRecord> {
          let skip = subscribeOptions.after !== undefined;
          for await (const record of subscribeEvents(runId, subscribeOptions)) {
            if (skip) skip = false;
            else yield record;
          }
        })();
    }),
  'keeps every event (no length bound)': (options) => without(options, { maxEventsPerRun: 1_000_000 }),
  'ignores the fence of run event appends and ends': (options) =>
    broken(options, (dispatcher) => {
      const appendEvents = dispatcher.appendEvents.bind(dispatcher);
      dispatcher.appendEvents = (runId, events) => appendEvents(runId, events);
      const endEvents = dispatcher.endEvents.bind(dispatcher);
      dispatcher.endEvents = (runId, endOptions) => endEvents(runId, { ttlMs: endOptions.ttlMs });
    }),
  'reopens an ended log when appended to': (options) =>
    broken(options, (dispatcher) => {
      const appendEvents = dispatcher.appendEvents.bind(dispatcher);
      const logs = (dispatcher.backend.events as unknown as { logs: Map<string, { ended: boolean }> }).logs;
      dispatcher.appendEvents = (runId, events, appendOptions) => {
        const log = logs.get(runId);
        if (log !== undefined) log.ended = false;
        return appendEvents(runId, events, appendOptions);
      };
    }),
  'dead-letters a thread whose claims were lost three times': (options) =>
    broken(options, (dispatcher) => {
      const lost = new Map<string, number>();
      const claim = dispatcher.claim.bind(dispatcher);
      dispatcher.claim = async (claimOptions) => {
        const claimed = await claim(claimOptions);
        if (claimed === undefined) return undefined;
        const count = (lost.get(claimed.threadId) ?? 0) + 1;
        lost.set(claimed.threadId, count);
        if (count <= 3) return claimed;
        await dispatcher.fail(claimed, new Error('lost its claim too often'), { retryable: false });
        return undefined;
      };
      for (const method of ['complete', 'fail', 'handBack'] as const) {
        const release = dispatcher[method].bind(dispatcher) as (
          held: DispatchClaim,
          ...rest: unknown[]
        ) => Promise<never>;
        dispatcher[method] = ((held: DispatchClaim, ...rest: unknown[]) => {
          lost.delete(held.threadId);
          return release(held, ...rest);
        }) as never;
      }
    }),
  'does not say that a submission went to a dead-lettered thread': (options) =>
    broken(options, (dispatcher) => {
      const submit = dispatcher.submit.bind(dispatcher);
      dispatcher.submit = async (submission) => ({ ...(await submit(submission)), deadLettered: false });
    }),
};

/**
 * Breakages a particular spec was written for: that test must be among the ones that fail (other specs may catch
 * them too).
 */
export const caughtBy: Record<string, string> = {
  'ignores the dedupe window it is given (keeps its default)': 'the dedupe window',
  'counts the dedupe window from the submission, not the acknowledgement': 'the dedupe window',
  'skips the first event after the id a subscription resumes from': 'an approval flow',
  "extends a claim by the dispatcher's default lock, not the claim's own, when given no lockMs":
    'extend without lockMs keeps the lock the claim was made with, on any instance: a short one lapses',
  "extends a claim by a short default lock, not the claim's own, when given no lockMs":
    'extend without lockMs keeps the lock the claim was made with, on any instance: a long one holds',
  "keeps one cancel request per thread (a newer one replaces another run's)": 'a cancel request per run',
};
