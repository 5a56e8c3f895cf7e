import type { RunEventRecord } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { collect, eventually, makeEvents, sleep, uniqueId } from '../fixtures.js';

/** Following a run's log: every event once, in order, from the start or after an id, on any instance. */
export function subscribeSpec(context: DispatchSpecContext): void {
  describe('subscribeEvents', () => {
    it('from the start: every event once, in order, also those appended meanwhile; ends after the end mark', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const events = makeEvents(runId, 9);
      const ids = await dispatcher.appendEvents(runId, events.slice(0, 3));
      const abort = new AbortController();
      const received = collect(sibling.subscribeEvents(runId, { signal: abort.signal }), {
        timeoutMs: 10_000,
        abort,
      });
      await sleep(50);
      ids.push(...(await dispatcher.appendEvents(runId, events.slice(3, 5))));
      await sleep(50);
      ids.push(...(await dispatcher.appendEvents(runId, events.slice(5, 6))));
      ids.push(...(await dispatcher.appendEvents(runId, events.slice(6))));
      await dispatcher.endEvents(runId, { ttlMs: 60_000 });
      expect(await received).toEqual(events.map((event, index) => ({ id: ids[index], event })));
    });

    it('after an id: only the later events, also when subscribing before any of them exist', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const abort = new AbortController();
      const early = collect(sibling.subscribeEvents(runId, { signal: abort.signal }), {
        timeoutMs: 10_000,
        abort,
      });
      const events = makeEvents(runId, 6);
      const ids = await dispatcher.appendEvents(runId, events.slice(0, 4));
      const late = collect(sibling.subscribeEvents(runId, { after: ids[1]!, signal: abort.signal }), {
        timeoutMs: 10_000,
        abort,
      });
      await sleep(50);
      ids.push(...(await dispatcher.appendEvents(runId, events.slice(4))));
      await dispatcher.endEvents(runId, { ttlMs: 60_000 });
      expect((await late).map((record) => record.id)).toEqual(ids.slice(2));
      expect((await late).map((record) => record.event)).toEqual(events.slice(2));
      expect((await early).map((record) => record.id)).toEqual(ids);
    });

    it('a subscription to an ended log yields what is there and ends; after its last id it ends at once', async () => {
      const dispatcher = await context.open();
      const runId = uniqueId('run');
      const ids = await dispatcher.appendEvents(runId, makeEvents(runId, 3));
      await dispatcher.endEvents(runId, { ttlMs: 60_000 });
      const signal = new AbortController().signal;
      const all = await collect(dispatcher.subscribeEvents(runId, { signal }), { timeoutMs: 5_000 });
      expect(all.map((record) => record.id)).toEqual(ids);
      const none = await collect(dispatcher.subscribeEvents(runId, { after: ids[2]!, signal }), {
        timeoutMs: 5_000,
      });
      expect(none).toEqual([]);
    });

    it('aborting the signal ends a waiting subscription quietly; others go on', async () => {
      const dispatcher = await context.open();
      const runId = uniqueId('run');
      const first = await dispatcher.appendEvents(runId, makeEvents(runId, 1));
      const stopped = new AbortController();
      const seen: RunEventRecord[] = [];
      const ended = collect(dispatcher.subscribeEvents(runId, { signal: stopped.signal }), {
        timeoutMs: 5_000,
        onRecord: (record) => seen.push(record),
      });
      const going = new AbortController();
      const other = collect(dispatcher.subscribeEvents(runId, { signal: going.signal }), {
        timeoutMs: 10_000,
        abort: going,
      });
      await eventually(() => seen.length === 1, 5_000, 'the first event');
      stopped.abort();
      expect((await ended).map((record) => record.id)).toEqual(first);
      const second = await dispatcher.appendEvents(runId, makeEvents(runId, 1, 1));
      await dispatcher.endEvents(runId, { ttlMs: 60_000 });
      expect((await other).map((record) => record.id)).toEqual([...first, ...second]);
    });

    it('several subscribers on two instances each get every event once, in order', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const abort = new AbortController();
      const subscribers = [dispatcher, sibling, dispatcher, sibling].map((instance) =>
        collect(instance.subscribeEvents(runId, { signal: abort.signal }), { timeoutMs: 15_000, abort }),
      );
      const events = makeEvents(runId, 60);
      const ids: string[] = [];
      for (let index = 0; index < events.length; index += 7) {
        ids.push(...(await dispatcher.appendEvents(runId, events.slice(index, index + 7))));
        if (index % 21 === 0) await sleep(10);
      }
      await sibling.endEvents(runId, { ttlMs: 60_000 });
      for (const received of await Promise.all(subscribers)) {
        expect(received.map((record) => record.id)).toEqual(ids);
      }
    });
  });
}
