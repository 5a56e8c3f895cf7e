import type { LunationStore } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  expectLunationError,
  makeAssistantMessage,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeUserMessage,
  sleep,
  uniqueId,
} from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, createThread } from './spec-helpers.js';

/** Splits settled outcomes, asserting exactly one winner; returns the winner's index and the loser's reasons. */
function exactlyOneWinner<T>(outcomes: PromiseSettledResult<T>[]): {
  winner: number;
  value: T;
  reasons: unknown[];
} {
  const winners = outcomes.flatMap((outcome, index) => (outcome.status === 'fulfilled' ? [index] : []));
  expect(winners, 'number of calls that succeeded').toHaveLength(1);
  const winner = winners[0]!;
  const value = (outcomes[winner] as PromiseFulfilledResult<T>).value;
  const reasons = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
  return { winner, value, reasons };
}

/** Two store instances on one backend (as two processes would see it). */
export function concurrencySpec(context: StoreSpecContext): void {
  if (!context.hasSiblings) {
    describe('two instances on one backend', () => {
      it.skip('skipped: createSibling was not given, so this backend cannot have two instances', () => {});
    });
    return;
  }

  describe('two instances on one backend', () => {
    let first: LunationStore;
    let second: LunationStore;

    async function open(): Promise<void> {
      first = context.store;
      second = await context.openSibling();
    }

    it('each instance sees what the other wrote', async () => {
      await open();
      const thread = await createThread(first, { resourceId: 'shared' });
      expect(await second.getThread(thread.id)).toEqual(thread);
      const run = makeRunRecord({ threadId: thread.id });
      await appendMessages(second, thread.id, 2, { run, threadState: { by: 'second' } });
      const checkpoint = await first.loadCheckpoint(thread.id);
      expect(checkpoint?.thread.messageCount).toBe(2);
      expect(checkpoint?.messages).toHaveLength(2);
      expect(checkpoint?.threadState).toEqual({ by: 'second' });
      expect(checkpoint?.latestRun).toEqual(run);
      expect(await first.loadCheckpoint(thread.id)).toEqual(await second.loadCheckpoint(thread.id));

      const input = makeBeginToolExecutionInput({ threadId: thread.id, runId: run.identity.runId });
      const begun = await first.beginToolExecution(input);
      expect(await second.getToolExecution(input.runId, input.toolCallId)).toEqual(begun);
      const lease = await second.acquireLease({
        threadId: thread.id,
        owner: 'second',
        runId: 'r',
        ttlMs: 30_000,
      });
      expect(await first.getLease(thread.id)).toEqual(lease);
      expect((await first.listThreads({ resourceId: 'shared' })).items.map((item) => item.id)).toEqual([
        thread.id,
      ]);
      expect(await first.deleteThread(thread.id)).toBe(true);
      expect(await second.getThread(thread.id)).toBeUndefined();
    });

    it('of two racing commits with the same expectedMessageCount, exactly one succeeds and the other gets store-conflict', async () => {
      await open();
      const thread = await createThread(first);
      const rounds = 8;
      const winners: string[] = [];
      for (let round = 0; round < rounds; round += 1) {
        const contenders = [first, second].map((store, index) => ({
          store,
          message: makeUserMessage(`round ${round} from ${index === 0 ? 'first' : 'second'}`),
          run: makeRunRecord({ threadId: thread.id }),
        }));
        const order = round % 2 === 0 ? contenders : [...contenders].reverse();
        const outcomes = await Promise.allSettled(
          order.map(({ store, message, run }) =>
            store.commit({
              threadId: thread.id,
              expectedMessageCount: round,
              messages: [message],
              run,
              threadState: { lastWriter: message.id },
            }),
          ),
        );
        const { winner, value, reasons } = exactlyOneWinner(outcomes);
        expect(value).toEqual({ messageCount: round + 1 });
        expect(reasons).toHaveLength(1);
        await expectLunationError(Promise.reject(reasons[0]), 'store-conflict');
        winners.push(order[winner]!.message.id);
        const loser = order[1 - winner]!;
        expect(await first.getRun(loser.run.identity.runId)).toBeUndefined();
        expect(await second.getRun(order[winner]!.run.identity.runId)).toEqual(order[winner]!.run);
      }
      for (const store of [first, second]) {
        const checkpoint = await store.loadCheckpoint(thread.id);
        expect(checkpoint?.thread.messageCount).toBe(rounds);
        expect(checkpoint?.messages.map((record) => record.seq)).toEqual(
          Array.from({ length: rounds }, (_, index) => index + 1),
        );
        expect(checkpoint?.messages.map((record) => record.message.id)).toEqual(winners);
        expect(checkpoint?.threadState).toEqual({ lastWriter: winners.at(-1) });
        expect((await store.listRuns(thread.id)).items).toHaveLength(rounds);
      }
    });

    it('of many racing commits across both instances, exactly one lands per expectedMessageCount', async () => {
      await open();
      const thread = await createThread(first);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 10 }, (_, index) =>
          (index % 2 === 0 ? first : second).commit({
            threadId: thread.id,
            expectedMessageCount: 0,
            messages: [makeUserMessage(`writer ${index}`), makeUserMessage(`writer ${index} again`)],
          }),
        ),
      );
      const { reasons } = exactlyOneWinner(outcomes);
      expect(reasons).toHaveLength(9);
      for (const reason of reasons) await expectLunationError(Promise.reject(reason), 'store-conflict');
      const records = await second.listMessages(thread.id);
      expect(records.map((record) => record.seq)).toEqual([1, 2]);
      const texts = records.map((record) =>
        record.message.content[0]?.type === 'text' ? record.message.content[0].text : '',
      );
      expect(texts[1]).toBe(`${texts[0]} again`);
    });

    it('loadCheckpoint reads consistently while the other instance commits', async () => {
      await open();
      const thread = await createThread(first);
      const run = makeRunRecord({ threadId: thread.id });
      const steps = 30;
      const writer = (async () => {
        for (let step = 1; step <= steps; step += 1) {
          await second.commit({
            threadId: thread.id,
            expectedMessageCount: step - 1,
            messages: [makeUserMessage(`step ${step}`)],
            run: { ...run, steps: step },
            threadState: { step },
          });
        }
      })();
      const seen: number[] = [];
      const reader = (async () => {
        for (let read = 0; read < steps; read += 1) {
          const checkpoint = await first.loadCheckpoint(thread.id);
          const count = checkpoint?.thread.messageCount ?? -1;
          seen.push(count);
          expect(checkpoint?.messages).toHaveLength(count);
          expect(checkpoint?.messages.map((record) => record.seq)).toEqual(
            Array.from({ length: count }, (_, index) => index + 1),
          );
          if (count > 0) {
            expect(checkpoint?.threadState).toEqual({ step: count });
            expect(checkpoint?.latestRun?.steps).toBe(count);
          }
        }
      })();
      await Promise.all([writer, reader]);
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect((await first.loadCheckpoint(thread.id))?.thread.messageCount).toBe(steps);
    });

    it('of two racing createThread calls with one id, exactly one succeeds and the other gets store-conflict', async () => {
      await open();
      const id = uniqueId('thread');
      const outcomes = await Promise.allSettled([
        first.createThread({ id, metadata: { by: 'first' } }),
        second.createThread({ id, metadata: { by: 'second' } }),
      ]);
      const { value, reasons } = exactlyOneWinner(outcomes);
      await expectLunationError(Promise.reject(reasons[0]), 'store-conflict');
      expect(await first.getThread(id)).toEqual(value);
      expect(await second.getThread(id)).toEqual(value);
    });

    it('of two racing acquireLease calls, exactly one gets the lease and the other gets thread-busy', async () => {
      await open();
      const threadId = uniqueId('thread');
      const outcomes = await Promise.allSettled([
        first.acquireLease({ threadId, owner: 'first', runId: 'run-first', ttlMs: 30_000 }),
        second.acquireLease({ threadId, owner: 'second', runId: 'run-second', ttlMs: 30_000 }),
      ]);
      const { value, reasons } = exactlyOneWinner(outcomes);
      const error = await expectLunationError(Promise.reject(reasons[0]), 'thread-busy');
      expect(error.details).toEqual(expect.objectContaining({ runId: value.runId, owner: value.owner }));
      expect(await first.getLease(threadId)).toEqual(value);
      expect(await second.getLease(threadId)).toEqual(value);
    });

    it('fences a holder whose lease expired and was taken through the other instance', async () => {
      await open();
      const thread = await createThread(first);
      const old = await first.acquireLease({ threadId: thread.id, owner: 'first', runId: 'r1', ttlMs: 50 });
      await sleep(90);
      const taken = await second.acquireLease({
        threadId: thread.id,
        owner: 'second',
        runId: 'r2',
        ttlMs: 30_000,
      });
      expect(taken.token).toBeGreaterThan(old.token);
      await expectLunationError(
        first.renewLease({ threadId: thread.id, token: old.token, ttlMs: 30_000 }),
        'lease-lost',
      );
      await expectLunationError(
        first.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          leaseToken: old.token,
        }),
        'stale-lease',
      );
      await expectLunationError(
        first.beginToolExecution({
          ...makeBeginToolExecutionInput({ threadId: thread.id, runId: 'r1' }),
          leaseToken: old.token,
        }),
        'stale-lease',
      );
      expect(await second.listMessages(thread.id)).toEqual([]);
      expect(await first.listToolExecutions('r1')).toEqual([]);
      expect(
        await second.commit({
          threadId: thread.id,
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          leaseToken: taken.token,
        }),
      ).toEqual({ messageCount: 1 });
    });

    it("a takeover never misses a late commit of the holder it fences: refused, or in the taker's checkpoint", async () => {
      // The holder's lease expired and nobody took it yet, so its (latest) token still commits. Its commit of a
      // step races another instance's acquire-then-load: either the commit is refused (stale-lease), or the taker
      // loads it. A taker that decides from that checkpoint (acquire first, then read) runs the step only when it
      // is not there, so the step's answer is in the history once; a read before the acquire has no such guarantee.
      await open();
      for (let round = 0; round < 8; round++) {
        const thread = await createThread(first);
        await appendMessages(first, thread.id, 1);
        const old = await first.acquireLease({ threadId: thread.id, owner: 'first', runId: 'r1', ttlMs: 1 });
        await sleep(5);
        const answer = makeAssistantMessage(`answer ${round}`);
        const [late, taken] = await Promise.allSettled([
          first.commit({
            threadId: thread.id,
            expectedMessageCount: 1,
            messages: [answer],
            leaseToken: old.token,
          }),
          second
            .acquireLease({ threadId: thread.id, owner: 'second', runId: 'r1', ttlMs: 30_000 })
            .then(async (lease) => ({ lease, checkpoint: await second.loadCheckpoint(thread.id) })),
        ]);
        expect(taken.status, 'the takeover').toBe('fulfilled');
        const { lease, checkpoint } = (
          taken as PromiseFulfilledResult<{
            lease: { token: number };
            checkpoint: Awaited<ReturnType<LunationStore['loadCheckpoint']>>;
          }>
        ).value;
        expect(lease.token).toBeGreaterThan(old.token);
        const seen = checkpoint?.messages.map((record) => record.message) ?? [];
        if (late.status === 'fulfilled') {
          expect(late.value).toEqual({ messageCount: 2 });
          expect(seen, 'the taker loads the commit that landed before it took the thread').toEqual([
            expect.anything(),
            answer,
          ]);
        } else {
          await expectLunationError(Promise.reject(late.reason), 'stale-lease');
          expect(seen).toHaveLength(1);
          await second.commit({
            threadId: thread.id,
            expectedMessageCount: checkpoint?.thread.messageCount ?? 0,
            messages: [answer],
            leaseToken: lease.token,
          });
        }
        // The fenced holder cannot add the answer again, whatever count it sends.
        for (const expectedMessageCount of [1, 2]) {
          await expectLunationError(
            first.commit({
              threadId: thread.id,
              expectedMessageCount,
              messages: [answer],
              leaseToken: old.token,
            }),
            'stale-lease',
          );
        }
        const history = (await second.listMessages(thread.id)).map((record) => record.message);
        expect(history.filter((message) => message.role === 'assistant')).toEqual([answer]);
      }
    });

    it('counts both of two racing beginToolExecution calls as attempts', async () => {
      await open();
      const thread = await createThread(first);
      const input = makeBeginToolExecutionInput({ threadId: thread.id, runId: uniqueId('run') });
      const entries = await Promise.all([first.beginToolExecution(input), second.beginToolExecution(input)]);
      expect(entries.map((entry) => entry.attempts).sort()).toEqual([1, 2]);
      expect((await second.getToolExecution(input.runId, input.toolCallId))?.attempts).toBe(2);
      expect(await first.listToolExecutions(input.runId)).toHaveLength(1);
    });
  });
}
