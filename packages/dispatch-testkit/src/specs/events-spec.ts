import { runEventRecordSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { expectLunationError, makeEvents, sleep, uniqueId } from '../fixtures.js';

/** Run event logs: ids, reads after an id, the end mark, the length bound and expiry. */
export function eventsSpec(context: DispatchSpecContext): void {
  describe('run event logs', () => {
    it('appendEvents gives each event an id that increases within its run, in append order', async () => {
      const dispatcher = await context.open();
      const sibling = await context.openSibling(dispatcher);
      const runId = uniqueId('run');
      const events = makeEvents(runId, 5);
      const firstIds = await dispatcher.appendEvents(runId, events.slice(0, 3));
      const laterIds = await sibling.appendEvents(runId, events.slice(3));
      const ids = [...firstIds, ...laterIds].map(Number);
      expect(ids).toHaveLength(5);
      for (let index = 1; index < ids.length; index++) expect(ids[index]).toBeGreaterThan(ids[index - 1]!);
      expect(ids[0]).toBeGreaterThan(0);
      const page = await sibling.readEvents(runId);
      expect(page.ended).toBe(false);
      expect(page.events).toEqual(events.map((event, index) => ({ id: String(ids[index]), event })));
      for (const record of page.events) expect(runEventRecordSchema.safeParse(record).success).toBe(true);
      expect(await dispatcher.appendEvents(runId, [])).toEqual([]);
    });

    it('readEvents reads after an id, up to a limit; runs are separate logs', async () => {
      const dispatcher = await context.open();
      const [runId, otherRun] = [uniqueId('run'), uniqueId('run')];
      const events = makeEvents(runId, 6);
      const ids = await dispatcher.appendEvents(runId, events);
      await dispatcher.appendEvents(otherRun, makeEvents(otherRun, 2));
      const after = await dispatcher.readEvents(runId, { after: ids[2] });
      expect(after.events.map((record) => record.id)).toEqual(ids.slice(3));
      expect(after.events.map((record) => record.event)).toEqual(events.slice(3));
      const limited = await dispatcher.readEvents(runId, { after: ids[0], limit: 2 });
      expect(limited.events.map((record) => record.id)).toEqual(ids.slice(1, 3));
      expect((await dispatcher.readEvents(runId, { after: '0' })).events).toHaveLength(6);
      expect((await dispatcher.readEvents(runId, { after: ids[5] })).events).toEqual([]);
      expect(
        (await dispatcher.readEvents(otherRun)).events.map((record) => record.event.identity.runId),
      ).toEqual([otherRun, otherRun]);
      expect(await dispatcher.readEvents(uniqueId('run'))).toEqual({ events: [], ended: false });
      for (const bad of ['x', '-1', '01', '1.5', '']) {
        await expectLunationError(dispatcher.readEvents(runId, { after: bad }), 'invalid-argument');
      }
    });

    it('endEvents marks the end: a read that reaches the last event says ended', async () => {
      const dispatcher = await context.open();
      const runId = uniqueId('run');
      const ids = await dispatcher.appendEvents(runId, makeEvents(runId, 3));
      await dispatcher.endEvents(runId, { ttlMs: 60_000 });
      expect((await dispatcher.readEvents(runId)).ended).toBe(true);
      expect((await dispatcher.readEvents(runId, { limit: 2 })).ended).toBe(false);
      expect(await dispatcher.readEvents(runId, { after: ids[2] })).toEqual({ events: [], ended: true });
      const empty = uniqueId('run');
      await dispatcher.endEvents(empty, { ttlMs: 60_000 });
      expect(await dispatcher.readEvents(empty)).toEqual({ events: [], ended: true });
    });

    it('keeps only the latest maxEventsPerRun events', async () => {
      const dispatcher = await context.open({ maxEventsPerRun: 5 });
      const runId = uniqueId('run');
      const events = makeEvents(runId, 12);
      const ids = [
        ...(await dispatcher.appendEvents(runId, events.slice(0, 4))),
        ...(await dispatcher.appendEvents(runId, events.slice(4))),
      ];
      const page = await dispatcher.readEvents(runId);
      expect(page.events.map((record) => record.id)).toEqual(ids.slice(7));
      expect(page.events.map((record) => record.event)).toEqual(events.slice(7));
      expect(
        (await dispatcher.readEvents(runId, { after: ids[1] })).events.map((record) => record.id),
      ).toEqual(ids.slice(7));
    });

    it('an ended log expires after its ttl', async () => {
      const dispatcher = await context.open();
      const [runId, kept] = [uniqueId('run'), uniqueId('run')];
      await dispatcher.appendEvents(runId, makeEvents(runId, 2));
      await dispatcher.appendEvents(kept, makeEvents(kept, 2));
      await dispatcher.endEvents(runId, { ttlMs: 100 });
      await dispatcher.endEvents(kept, { ttlMs: 60_000 });
      await sleep(400);
      expect(await dispatcher.readEvents(runId)).toEqual({ events: [], ended: false });
      expect(await dispatcher.readEvents(kept)).toEqual(expect.objectContaining({ ended: true }));
      expect((await dispatcher.readEvents(kept)).events).toHaveLength(2);
    });
  });
}
