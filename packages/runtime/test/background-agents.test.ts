import type { AgentEvent } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { backgroundTasksPlugin, createRuntime, defineTool } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

describe('background agents', () => {
  it('runs two background agents of one thread on child threads of their own', async () => {
    const helperModel = new ScriptedModel([
      { text: 'first answer', delayMs: 20 },
      { text: 'second answer', delayMs: 20 },
    ]);
    const startHelpers = defineTool({
      name: 'start_helpers',
      description: 'Starts two helpers in the background',
      input: z.object({}),
      execute: (_, context) => ({
        first: context.background.spawnAgent('helper', 'one'),
        second: context.background.spawnAgent('helper', 'two'),
      }),
    });
    const model = new ScriptedModel([callTool('start_helpers', {}), reply('Working.'), reply('Both done.')]);
    const starts: string[] = [];
    const ends: AgentEvent[] = [];
    let runtimeRef: ReturnType<ReturnType<typeof createRuntime>['build']> | undefined;
    const runtime = createRuntime()
      .model('m', model)
      .model('h', helperModel)
      .agent({
        id: 'a',
        model: 'm',
        tools: [startHelpers],
        plugins: [backgroundTasksPlugin(() => runtimeRef!.tasks)],
      })
      .agent({ id: 'helper', model: 'h' })
      .sink({
        emit: (event) => {
          if (event.type === 'run-start') starts.push(event.identity.threadId);
          if (event.type === 'run-end' && event.identity.threadId === 't') ends.push(event);
        },
      })
      .build();
    runtimeRef = runtime;
    const first = await runtime.generate({ threadId: 't', input: 'ask two helpers' });
    expect(first.termination).toEqual({ type: 'awaiting-tasks' });
    const deadline = Date.now() + 5_000;
    while (ends.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const children = starts.filter((threadId) => threadId.startsWith('t~task~helper~'));
    expect(children).toHaveLength(2);
    expect(new Set(children).size).toBe(2);
    const results = (model.requests[2]?.messages ?? [])
      .map((message) => message.content.map((part) => ('text' in part ? part.text : '')).join(''))
      .filter((text) => text.startsWith('[background task'));
    expect(results).toHaveLength(2);
    expect(results.every((text) => /^\[background task "agent:helper" \(.+\) completed\]/.test(text))).toBe(
      true,
    );
    expect(results.map((text) => text.split('\n')[1]).sort()).toEqual(['first answer', 'second answer']);
  });
});
