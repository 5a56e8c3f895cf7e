import { type RunRecord, runRecordSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { makeRunRecord, uniqueId } from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, collectPages, createThread, expectSchema } from './spec-helpers.js';

function runIds(runs: RunRecord[]): string[] {
  return runs.map((run) => run.identity.runId);
}

/** getRun, getLatestRun and listRuns, with run records written through commit. */
export function runsSpec(context: StoreSpecContext): void {
  describe('runs', () => {
    async function commitRun(run: RunRecord): Promise<void> {
      const thread = await context.store.getThread(run.identity.threadId);
      await context.store.commit({
        threadId: run.identity.threadId,
        expectedMessageCount: thread?.messageCount ?? 0,
        messages: [],
        run,
      });
    }

    it('getRun returns the committed run record exactly, and undefined for an unknown id', async () => {
      const thread = await createThread(context.store);
      const run = makeRunRecord(
        { threadId: thread.id, agentId: 'planner' },
        {
          status: 'waiting',
          termination: { type: 'suspended' },
          steps: 4,
          usage: {
            inputTokens: 120,
            outputTokens: 30,
            cacheReadTokens: 7,
            cacheWriteTokens: 2,
            reasoningTokens: 5,
          },
          openTickets: [
            {
              id: 'ticket-1',
              toolCallId: 'call-1',
              toolName: 'deploy',
              arguments: '{"env":"prod"}',
              action: 'approve',
              message: 'Deploy to prod?',
              parameters: { env: 'prod' },
              responseSchema: { type: 'object', properties: { ok: { type: 'boolean' } } },
              resumeMode: 'replay-tool-call',
              runId: 'run-with-ticket',
            },
          ],
          state: { plan: ['a', 'b'], counter: 3 },
          finalText: 'Waiting for approval',
          registryVersion: 7,
        },
      );
      run.openTickets[0]!.runId = run.identity.runId;
      run.identity.parentRunId = 'parent-run';
      run.identity.parentToolCallId = 'parent-call';
      run.identity.origin = 'subagent';
      await commitRun(run);
      const loaded = await context.store.getRun(run.identity.runId);
      expectSchema(runRecordSchema, loaded);
      expect(loaded).toEqual(run);
      expect(await context.store.getRun(uniqueId('missing'))).toBeUndefined();
    });

    it('a commit with an existing runId replaces that run record (one record per runId)', async () => {
      const thread = await createThread(context.store);
      const run = makeRunRecord({ threadId: thread.id });
      await commitRun(run);
      const finished: RunRecord = {
        ...run,
        status: 'done',
        termination: { type: 'natural-end' },
        steps: 3,
        finalText: 'All done',
        state: { answer: 42 },
        updatedAt: run.updatedAt + 500,
      };
      await commitRun(finished);
      expect(await context.store.getRun(run.identity.runId)).toEqual(finished);
      const page = await context.store.listRuns(thread.id);
      expect(page.items).toEqual([finished]);
      expect(await context.store.getLatestRun(thread.id)).toEqual(finished);
    });

    it('getLatestRun returns the most recently created run, not the most recently updated', async () => {
      const thread = await createThread(context.store);
      expect(await context.store.getLatestRun(thread.id)).toBeUndefined();
      const base = Date.now();
      const first = makeRunRecord({ threadId: thread.id }, { createdAt: base, updatedAt: base });
      const second = makeRunRecord({ threadId: thread.id }, { createdAt: base + 10, updatedAt: base + 10 });
      await commitRun(first);
      await commitRun(second);
      expect(runIds([(await context.store.getLatestRun(thread.id))!])).toEqual([second.identity.runId]);
      await commitRun({ ...first, steps: 9, updatedAt: base + 1000 });
      expect(await context.store.getLatestRun(thread.id)).toEqual(second);
      const backdated = makeRunRecord(
        { threadId: thread.id },
        { createdAt: base - 100, updatedAt: base + 2000 },
      );
      await commitRun(backdated);
      expect(await context.store.getLatestRun(thread.id)).toEqual(second);
    });

    it('getLatestRun breaks createdAt ties by insertion order (the later insert wins)', async () => {
      const thread = await createThread(context.store);
      const at = Date.now();
      const runs = ['x', 'y', 'z'].map((agentId) =>
        makeRunRecord({ threadId: thread.id, agentId }, { createdAt: at, updatedAt: at }),
      );
      for (const run of runs) {
        await commitRun(run);
        expect(await context.store.getLatestRun(thread.id)).toEqual(run);
      }
      await commitRun({ ...runs[0]!, steps: 2 });
      expect(await context.store.getLatestRun(thread.id)).toEqual(runs[2]);
    });

    it('listRuns returns the runs of one thread oldest first', async () => {
      const thread = await createThread(context.store);
      const other = await createThread(context.store);
      const base = Date.now();
      const runs = [30, 10, 20].map((offset) =>
        makeRunRecord({ threadId: thread.id }, { createdAt: base + offset, updatedAt: base + offset }),
      );
      for (const run of runs) await commitRun(run);
      await commitRun(makeRunRecord({ threadId: other.id }));
      const page = await context.store.listRuns(thread.id);
      expect(page.nextCursor).toBeUndefined();
      expect(runIds(page.items)).toEqual(runIds([runs[1]!, runs[2]!, runs[0]!]));
      expect((await context.store.listRuns(other.id)).items).toHaveLength(1);
      expect(await context.store.listRuns(uniqueId('missing'))).toEqual({ items: [] });
    });

    it('listRuns pages with limit and cursor, without duplicates or gaps', async () => {
      const thread = await createThread(context.store);
      const at = Date.now();
      const runs: RunRecord[] = [];
      for (let index = 0; index < 5; index += 1) {
        // Two pairs share a createdAt, so insertion order must break the tie.
        const createdAt = at + Math.floor(index / 2);
        runs.push(makeRunRecord({ threadId: thread.id }, { createdAt, updatedAt: createdAt }));
      }
      for (const run of runs) await appendMessages(context.store, thread.id, 1, { run });
      const pages = await collectPages((cursor) => context.store.listRuns(thread.id, { limit: 2, cursor }));
      expect(pages.map((page) => page.length)).toEqual([2, 2, 1]);
      expect(runIds(pages.flat())).toEqual(runIds(runs));

      const exact = await collectPages((cursor) => context.store.listRuns(thread.id, { limit: 5, cursor }));
      expect(exact.map((page) => page.length)).toEqual([5]);
    });

    it('listRuns returns 50 runs per page by default', async () => {
      const thread = await createThread(context.store);
      const at = Date.now();
      const runs: RunRecord[] = [];
      for (let index = 0; index < 51; index += 1) {
        const run = makeRunRecord({ threadId: thread.id }, { createdAt: at + index, updatedAt: at + index });
        runs.push(run);
        await commitRun(run);
      }
      const first = await context.store.listRuns(thread.id);
      expect(first.items).toHaveLength(50);
      expect(first.nextCursor).toEqual(expect.any(String));
      const second = await context.store.listRuns(thread.id, { cursor: first.nextCursor });
      expect(second.items).toHaveLength(1);
      expect(second.nextCursor).toBeUndefined();
      expect(runIds([...first.items, ...second.items])).toEqual(runIds(runs));
    });
  });
}
