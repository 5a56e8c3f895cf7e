import type { JsonObject, LunationStore } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { RUN_JOURNAL_KEY, runJournalOf } from '../src/internal.js';
import { RUN_JOURNAL_LIMIT } from '../src/loop/run-journal.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

const readFile = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  input: z.object({ path: z.string() }),
  execute: ({ path }) => `contents of ${path}`,
});

function runtimeOn(store: LunationStore, model: ScriptedModel, owner: string) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [readFile],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ owner })
    .build();
}

describe('the run journal', () => {
  it('records each step with its lease token and runner, a suspension and a resume elsewhere', async () => {
    const store = new MemoryStore();
    const model = new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')]);
    const thread = await store.createThread({ id: 't1' });
    const first = runtimeOn(store, model, 'process-a');
    const run = await first.run({ threadId: thread.id, input: 'read a.txt' });
    const suspended = await run.result;
    expect(suspended.status).toBe('waiting');

    const second = runtimeOn(store, model, 'process-b');
    const ticket = suspended.openTickets[0]!;
    const outcome = await second.sendDecisions(thread.id, [
      { decisionId: 'd', ticketId: ticket.id, action: 'resume' },
    ]);
    await outcome.run?.result;

    const record = await store.getRun(run.runId);
    const journal = runJournalOf(record!);
    expect(journal.map((entry) => [entry.event, entry.step, entry.owner])).toEqual([
      ['step', 1, 'process-a'],
      ['suspended', 1, 'process-a'],
      ['resumed', 1, 'process-b'],
      ['step', 2, 'process-b'],
      ['ended', 2, 'process-b'],
    ]);
    expect(journal[0]).toMatchObject({ token: expect.any(Number), modelMs: expect.any(Number) });
    expect(journal[0]?.usage).toBeDefined();
    expect(journal[1]?.tickets).toEqual([ticket.id]);
    expect(journal[4]?.termination).toBe('natural-end');
    // A resume takes the lease again: a new token, a new runner instance.
    expect(journal[2]?.token).toBeGreaterThan(journal[0]!.token!);
    expect(journal[2]?.incarnation).not.toBe(journal[0]?.incarnation);
    // The journal is the run record's, never the thread's state.
    expect(await store.getThreadState(thread.id)).not.toHaveProperty(RUN_JOURNAL_KEY);
  });

  it('stores each runner once, on its first entry, and usage without zero counts; runJournalOf restores both', async () => {
    const store = new MemoryStore();
    const usage = { usage: { inputTokens: 10, outputTokens: 5 } };
    const model = new ScriptedModel([
      callTool('read_file', { path: 'a.txt' }, usage),
      reply('It says hello.', usage),
    ]);
    await store.createThread({ id: 't3' });
    const run = await runtimeOn(store, model, 'process-a').run({ threadId: 't3', input: 'read a.txt' });
    const ticket = (await run.result).openTickets[0]!;
    const outcome = await runtimeOn(store, model, 'process-b').sendDecisions('t3', [
      { decisionId: 'd', ticketId: ticket.id, action: 'resume' },
    ]);
    await outcome.run?.result;

    const record = (await store.getRun(run.runId))!;
    const stored = record.state[RUN_JOURNAL_KEY] as Record<string, unknown>[];
    expect(stored.map((entry) => entry.owner)).toEqual([
      'process-a',
      undefined,
      'process-b',
      undefined,
      undefined,
    ]);
    expect(stored.filter((entry) => 'token' in entry || 'incarnation' in entry)).toHaveLength(2);
    expect(stored[0]?.usage).toEqual({ inputTokens: 10, outputTokens: 5 });

    const journal = runJournalOf(record);
    expect(journal.map((entry) => [entry.owner, entry.token, entry.incarnation])).toEqual([
      ...Array.from({ length: 2 }, () => ['process-a', stored[0]?.token, stored[0]?.incarnation]),
      ...Array.from({ length: 3 }, () => ['process-b', stored[2]?.token, stored[2]?.incarnation]),
    ]);
    expect(journal[0]?.usage).toEqual({
      inputTokens: 10,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      reasoningTokens: 0,
    });
  });

  it('reads a journal stored with every entry whole (as written before it was compact)', () => {
    const whole: JsonObject[] = [
      { event: 'step', at: 1, step: 1, owner: 'a', token: 3, incarnation: 'i1', modelMs: 2 },
      { event: 'ended', at: 2, step: 1, owner: 'b', token: 4, incarnation: 'i2', termination: 'natural-end' },
    ];
    expect(runJournalOf({ state: { [RUN_JOURNAL_KEY]: whole } })).toEqual(whole);
  });

  it('keeps at most the last RUN_JOURNAL_LIMIT entries', async () => {
    const store = new MemoryStore();
    const steps = RUN_JOURNAL_LIMIT + 20;
    const noop = defineTool({
      name: 'noop',
      description: 'Does nothing',
      input: z.object({}),
      execute: () => 'ok',
    });
    const model = new ScriptedModel([
      ...Array.from({ length: steps }, () => callTool('noop', {})),
      reply('done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [noop], maxRounds: steps + 5 })
      .store(store)
      .build();
    await store.createThread({ id: 't2' });
    const run = await runtime.run({ threadId: 't2', input: 'go' });
    expect((await run.result).status).toBe('done');
    const journal = runJournalOf((await store.getRun(run.runId))!);
    expect(journal).toHaveLength(RUN_JOURNAL_LIMIT);
    // The runner's first entry is gone: the oldest kept one carries the runner now.
    const stored = (await store.getRun(run.runId))!.state[RUN_JOURNAL_KEY] as Record<string, unknown>[];
    expect(stored[0]).toMatchObject({ owner: expect.any(String), incarnation: expect.any(String) });
    expect(stored.slice(1).every((entry) => entry.owner === undefined)).toBe(true);
    expect(new Set(journal.map((entry) => `${entry.owner}/${entry.incarnation}`)).size).toBe(1);
    expect(journal[0]?.owner).not.toBe('unknown');
    expect(journal.at(-1)).toMatchObject({ event: 'ended', step: steps + 1 });
    expect(journal.at(-2)).toMatchObject({ event: 'step', step: steps + 1 });
  });
});
