import { LunationError, type LunationStore, type ModelRequest } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool } from '../src/index.js';
import { reply, ScriptedModel } from '../src/testing/index.js';
import { processOn } from './loop/loop-processes.js';

function runtimeOn(store: LunationStore, executions: Array<{ rerun: boolean }>, crash?: () => void) {
  let calls = 0;
  const work = defineTool({
    name: 'work',
    description: 'work',
    input: z.object({}),
    execute: async (_input, context) => {
      executions.push({ rerun: context.rerun });
      if (crash && ++calls === 1) {
        crash();
        await new Promise(() => {});
      }
      return 'worked';
    },
  });
  const model = new ScriptedModel((request: ModelRequest) =>
    request.messages.some((message) => message.role === 'tool')
      ? reply('all done')
      : { toolCalls: [{ toolName: 'work', arguments: {} }] },
  );
  return createRuntime()
    .model('m', model)
    .agent({ id: 'a', model: 'm', tools: [work] })
    .store(store)
    .options({ leaseTtlMs: 5_000 })
    .build();
}

describe('AgentRuntime.resumeCutOffRuns', () => {
  it('continues only the threads whose run was cut off, re-running the interrupted tool once', async () => {
    const store = new MemoryStore();
    const executions: Array<{ rerun: boolean }> = [];
    await runtimeOn(store, executions).generate({ threadId: 'finished', input: 'go', resourceId: 'u1' });
    const dying = processOn(store);
    await runtimeOn(dying.store, executions, dying.crash).run({
      threadId: 'cut',
      input: 'go',
      resourceId: 'u1',
    });
    const deadline = Date.now() + 5_000;
    while ((await store.getLatestRun('cut'))?.status !== 'running' || executions.length < 2) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the tool to start');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    executions.length = 0;

    const started: string[] = [];
    const restarted = runtimeOn(store, executions);
    const outcome = await restarted.resumeCutOffRuns({ onRun: (run) => started.push(run.threadId) });
    expect(outcome.busy).toEqual([]);
    expect(outcome.failed).toEqual([]);
    expect(outcome.resumed.map((run) => run.threadId)).toEqual(['cut']);
    expect(started).toEqual(['cut']);
    const result = await outcome.resumed[0]!.result;
    expect(result.finalText).toBe('all done');
    expect(executions).toEqual([{ rerun: true }]);
    expect(await store.getLatestRun('cut')).toMatchObject({ status: 'done', identity: { threadId: 'cut' } });

    // Nothing is left to continue.
    expect((await restarted.resumeCutOffRuns()).resumed).toEqual([]);
  });

  it('reports a thread whose run is active in this process as busy, not failed', async () => {
    const store = new MemoryStore();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const slow = defineTool({
      name: 'work',
      description: 'work',
      input: z.object({}),
      execute: async () => {
        await gate;
        return 'worked';
      },
    });
    const runtime = createRuntime()
      .model(
        'm',
        new ScriptedModel((request: ModelRequest) =>
          request.messages.some((message) => message.role === 'tool')
            ? reply('done')
            : { toolCalls: [{ toolName: 'work', arguments: {} }] },
        ),
      )
      .agent({ id: 'a', model: 'm', tools: [slow] })
      .store(store)
      .build();
    const run = await runtime.run({ threadId: 'live', input: 'go' });
    while ((await store.getLatestRun('live'))?.status !== 'running') {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const outcome = await runtime.resumeCutOffRuns({ busyWaitMs: 0 });
    expect(outcome).toEqual({ resumed: [], busy: ['live'], failed: [] });
    release();
    expect((await run.result).finalText).toBe('done');
  });

  it('starts nothing when the run it waited for ends in the live process that held it', async () => {
    const store = new MemoryStore();
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const build = (owner: string) =>
      createRuntime()
        .model(
          'm',
          new ScriptedModel((request: ModelRequest) =>
            request.messages.some((message) => message.role === 'tool')
              ? reply('done')
              : { toolCalls: [{ toolName: 'work', arguments: {} }] },
          ),
        )
        .agent({
          id: 'a',
          model: 'm',
          tools: [
            defineTool({
              name: 'work',
              description: 'work',
              input: z.object({}),
              execute: async () => {
                await gate;
                return 'worked';
              },
            }),
          ],
        })
        .store(store)
        .options({ owner, leaseTtlMs: 5_000 })
        .build();
    const run = await build('live').run({ threadId: 'held', input: 'go' });
    while ((await store.getLatestRun('held'))?.status !== 'running') {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const scan = build('other').resumeCutOffRuns({ busyWaitMs: 5_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    release();
    await run.result;
    expect(await scan).toEqual({ resumed: [], busy: [], failed: [] });
    expect((await store.listRuns('held')).items).toHaveLength(1);
  });

  it('has nothing to continue without a store, and refuses bad options', async () => {
    const runtime = createRuntime()
      .model('m', new ScriptedModel([reply('hi')]))
      .agent({ id: 'a', model: 'm' })
      .build();
    expect(await runtime.resumeCutOffRuns()).toEqual({ resumed: [], busy: [], failed: [] });
    const stored = runtimeOn(new MemoryStore(), []);
    const error = await stored.resumeCutOffRuns({ scanLimit: -1 }).catch((caught: unknown) => caught);
    expect(LunationError.hasCode(error, 'invalid-argument')).toBe(true);
  });
});
