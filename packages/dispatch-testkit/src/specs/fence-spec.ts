import type { Dispatcher } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { expectLunationError, makeEvents, sleep, uniqueId } from '../fixtures.js';

/** The seqs of a run's log, in log order. */
async function seqs(dispatcher: Dispatcher, runId: string): Promise<number[]> {
  return (await dispatcher.readEvents(runId)).events.map((record) => record.event.seq);
}

/** Fenced run event logs: a lower fence is refused, a retried append is taken once, nothing after the end mark. */
export function fenceSpec(context: DispatchSpecContext): void {
  describe('run event logs: fences and the end mark', () => {
    it('refuses an append or end under a lower fence (stale-lease) and keeps nothing of it; a higher fence starts over', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const first = await dispatcher.appendEvents(runId, makeEvents(runId, 3), { fence: 7 });
      expect(first).toHaveLength(3);
      // The next lease's invocation of the run: seq starts at 0 again, and it is appended.
      const second = await sibling.appendEvents(runId, makeEvents(runId, 2), { fence: 8 });
      expect(second).toHaveLength(2);
      expect(Number(second[0])).toBeGreaterThan(Number(first[2]));
      // The old lease wakes up and goes on writing: refused, on either instance.
      for (const instance of [dispatcher, sibling]) {
        const error = await expectLunationError(
          instance.appendEvents(runId, makeEvents(runId, 2, 3), { fence: 7 }),
          'stale-lease',
        );
        expect(error.details).toEqual({ runId, fence: 7, logFence: 8 });
        expect(error.message).toContain(runId);
      }
      await expectLunationError(dispatcher.endEvents(runId, { ttlMs: 60_000, fence: 7 }), 'stale-lease');
      const page = await sibling.readEvents(runId);
      expect(page.ended).toBe(false);
      expect(page.events.map((record) => record.id)).toEqual([...first, ...second]);
      expect(page.events.map((record) => record.event.seq)).toEqual([0, 1, 2, 0, 1]);
      await sibling.endEvents(runId, { ttlMs: 60_000, fence: 8 });
      expect((await dispatcher.readEvents(runId)).ended).toBe(true);
    });

    it('an append of no events under a higher fence claims the log: the lower fence is refused from then on, and the claiming fence appends from seq 0', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      await dispatcher.appendEvents(runId, makeEvents(runId, 2), { fence: 5 });
      // A worker that took the thread over claims the log before it reads what the log lacks.
      expect(await sibling.appendEvents(runId, [], { fence: 6 })).toEqual([]);
      // The stalled previous holder wakes up and appends what it had: refused, nothing kept.
      const error = await expectLunationError(
        dispatcher.appendEvents(runId, makeEvents(runId, 2, 2), { fence: 5 }),
        'stale-lease',
      );
      expect(error.details).toEqual({ runId, fence: 5, logFence: 6 });
      expect(await seqs(dispatcher, runId)).toEqual([0, 1]);
      expect(await sibling.appendEvents(runId, makeEvents(runId, 2), { fence: 6 })).toHaveLength(2);
      expect(await seqs(dispatcher, runId)).toEqual([0, 1, 0, 1]);
      // Claiming with a fence the log has already seen changes nothing.
      expect(await dispatcher.appendEvents(runId, [], { fence: 6 })).toEqual([]);
      expect(await sibling.appendEvents(runId, makeEvents(runId, 1, 2), { fence: 6 })).toHaveLength(1);
      expect(await seqs(dispatcher, runId)).toEqual([0, 1, 0, 1, 2]);
    });

    it('a retried append within one fence drops the events the log already took and appends the rest in order', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const events = makeEvents(runId, 6);
      const first = await dispatcher.appendEvents(runId, events.slice(0, 3), { fence: 3 });
      // The answer of the first append was lost: the worker sends seq 1..4 again.
      const retried = await sibling.appendEvents(runId, events.slice(1, 5), { fence: 3 });
      expect(retried).toHaveLength(2);
      expect(Number(retried[0])).toBeGreaterThan(Number(first[2]));
      expect(Number(retried[1])).toBeGreaterThan(Number(retried[0]));
      expect(await dispatcher.appendEvents(runId, events.slice(0, 5), { fence: 3 })).toEqual([]);
      expect(await seqs(dispatcher, runId)).toEqual([0, 1, 2, 3, 4]);
      const page = await dispatcher.readEvents(runId);
      expect(page.events.map((record) => record.id)).toEqual([...first, ...retried]);
      expect(page.events.map((record) => record.event)).toEqual(events.slice(0, 5));
      // A higher fence is a new invocation of the run: its seq 0 is new.
      const next = await sibling.appendEvents(runId, makeEvents(runId, 2), { fence: 4 });
      expect(next).toHaveLength(2);
      expect(await seqs(dispatcher, runId)).toEqual([0, 1, 2, 3, 4, 0, 1]);
      // An append without a fence neither checks nor moves the position.
      expect(await dispatcher.appendEvents(runId, makeEvents(runId, 1))).toHaveLength(1);
      expect(await dispatcher.appendEvents(runId, makeEvents(runId, 2, 1), { fence: 4 })).toHaveLength(1);
      expect(await seqs(dispatcher, runId)).toEqual([0, 1, 2, 3, 4, 0, 1, 0, 2]);
    });

    it('two instances racing the same fenced batch append it once', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const events = makeEvents(runId, 8);
      for (let round = 0; round < 4; round++) {
        const batch = events.slice(round * 2, round * 2 + 2);
        const [a, b] = await Promise.all([
          dispatcher.appendEvents(runId, batch, { fence: 1 }),
          sibling.appendEvents(runId, batch, { fence: 1 }),
        ]);
        expect(a.length + b.length).toBe(2);
      }
      expect(await seqs(sibling, runId)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    });

    it('appends nothing after the end mark, fenced or not (stale-lease), while the ended log is kept', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const ids = await dispatcher.appendEvents(runId, makeEvents(runId, 3), { fence: 5 });
      await dispatcher.endEvents(runId, { ttlMs: 60_000, fence: 5 });
      for (const options of [undefined, { fence: 5 }, { fence: 6 }]) {
        const error = await expectLunationError(
          sibling.appendEvents(runId, makeEvents(runId, 2, 3), options),
          'stale-lease',
        );
        expect(error.details).toEqual({ runId, ended: true });
      }
      const page = await sibling.readEvents(runId);
      expect(page).toEqual({ events: page.events, ended: true });
      expect(page.events.map((record) => record.id)).toEqual(ids);
      // Ending it again (a retried endEvents) is harmless; a log ended before any append takes nothing either.
      await sibling.endEvents(runId, { ttlMs: 60_000, fence: 5 });
      expect((await dispatcher.readEvents(runId)).events.map((record) => record.id)).toEqual(ids);
      const empty = uniqueId('run');
      await dispatcher.endEvents(empty, { ttlMs: 60_000 });
      await expectLunationError(dispatcher.appendEvents(empty, makeEvents(empty, 1)), 'stale-lease');
      expect(await dispatcher.readEvents(empty)).toEqual({ events: [], ended: true });
    });

    it('once an ended log expired, an append starts a new log, fence and all', async () => {
      const dispatcher = await context.open();
      const runId = uniqueId('run');
      await dispatcher.appendEvents(runId, makeEvents(runId, 3), { fence: 9 });
      await dispatcher.endEvents(runId, { ttlMs: 100, fence: 9 });
      await sleep(400);
      const events = makeEvents(runId, 2);
      const ids = await dispatcher.appendEvents(runId, events, { fence: 2 });
      expect(ids).toEqual(['1', '2']);
      expect(await dispatcher.readEvents(runId)).toEqual({
        events: events.map((event, index) => ({ id: ids[index], event })),
        ended: false,
      });
    });

    it('rejects a malformed fence, and with a fence an event without a seq, with invalid-argument', async () => {
      const dispatcher = await context.open();
      const runId = uniqueId('run');
      for (const fence of [-1, 1.5, Number.NaN, '3']) {
        await expectLunationError(
          dispatcher.appendEvents(runId, makeEvents(runId, 1), { fence: fence as number }),
          'invalid-argument',
        );
        await expectLunationError(
          dispatcher.endEvents(runId, { ttlMs: 1_000, fence: fence as number }),
          'invalid-argument',
        );
      }
      const [event] = makeEvents(runId, 1);
      const { seq: _, ...withoutSeq } = event!;
      await expectLunationError(
        dispatcher.appendEvents(runId, [withoutSeq as typeof event & {}], { fence: 1 }),
        'invalid-argument',
      );
      expect(await dispatcher.readEvents(runId)).toEqual({ events: [], ended: false });
    });
  });
}
