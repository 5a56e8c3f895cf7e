import { backgroundTasksPlugin, createRuntime, defineTool, tasksKey } from '@lunation/runtime';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';

describe('background tasks across a restart', () => {
  it('reports a task whose process died as failed, with a reason, and persists its status', async () => {
    const backend = MemoryStore.createBackend();
    const neverEnding = defineTool({
      name: 'start_job',
      description: 'Starts a job that never ends',
      input: z.object({}),
      execute: (_, context) => ({
        started: context.background.spawn('forever', () => new Promise(() => {})),
      }),
    });
    const build = (model: ScriptedModel) => {
      let runtime: ReturnType<ReturnType<typeof createRuntime>['build']> | undefined;
      runtime = createRuntime()
        .model('m', model)
        .agent({
          id: 'a',
          model: 'm',
          tools: [neverEnding],
          plugins: [backgroundTasksPlugin(() => runtime!.tasks)],
        })
        .store(new MemoryStore({ backend }))
        .build();
      return runtime;
    };
    const before = build(
      new ScriptedModel([{ toolCalls: [{ toolName: 'start_job', arguments: {} }] }, reply('Started.')]),
    );
    const first = await before.generate({ threadId: 't', input: 'start it' });
    expect(first.termination).toEqual({ type: 'awaiting-tasks' });
    expect(first.status).toBe('waiting');

    // "Restart": a new runtime on the same store; the old process's task is gone.
    const model = new ScriptedModel([reply('Sorry, the job failed.')]);
    const after = build(model);
    const result = await after.generate({ threadId: 't', input: 'how is it going?' });
    expect(result.finalText).toBe('Sorry, the job failed.');
    const lines =
      model.requests[0]?.messages.map((message) =>
        message.content.map((part) => ('text' in part ? part.text : '')).join(''),
      ) ?? [];
    expect(
      lines.some((line) =>
        /\[background task "forever" \(.+\) failed\]: the process running it \(.+\) stopped before it finished/.test(
          line,
        ),
      ),
    ).toBe(true);
    const state = await new MemoryStore({ backend }).getThreadState('t');
    const tasks = Object.values(state[tasksKey.name] as Record<string, { status: string; error?: string }>);
    expect(tasks).toEqual([
      expect.objectContaining({
        status: 'failed',
        error: expect.stringContaining('stopped before it finished'),
      }),
    ]);
  });
});
