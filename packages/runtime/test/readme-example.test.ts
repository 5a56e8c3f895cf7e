import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { toolBudgetPlugin } from '../examples/tool-budget-plugin.js';
import { createRuntime, defineTool } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

describe('README plugin example', () => {
  it('is the code in examples/tool-budget-plugin.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('../examples/tool-budget-plugin.ts', import.meta.url), 'utf8');
    const shown = example.replace("from '../src/index.js'", "from '@lunation/runtime'");
    expect(readme).toContain(shown.trim());
  });

  it('blocks tool calls past the budget, counting across runs of the thread', async () => {
    let runs = 0;
    const ping = defineTool({
      name: 'ping',
      description: 'Pings',
      input: z.object({}),
      execute: () => ++runs,
    });
    const model = new ScriptedModel([
      callTool('ping', {}),
      callTool('ping', {}),
      reply('first run done'),
      callTool('ping', {}),
      reply('second run done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [ping],
        plugins: [{ plugin: toolBudgetPlugin, config: { maxCalls: 2 } }],
      })
      .build();
    expect((await runtime.generate({ threadId: 't', input: 'go' })).finalText).toBe('first run done');
    expect(runs).toBe(2);
    const second = await runtime.generate({ threadId: 't', input: 'again' });
    expect(second.finalText).toBe('second run done');
    expect(runs).toBe(2);
    const lastTool = model.requests.at(-1)?.messages.at(-1);
    expect(lastTool?.content[0]).toMatchObject({
      result: { status: 'error', message: 'Tool budget exhausted; answer without tools.' },
    });
  });

  it('rejects a bad config naming the plugin and the field', () => {
    expect(() =>
      createRuntime()
        .model('m', new ScriptedModel([]))
        .agent({ id: 'a', model: 'm', plugins: [{ plugin: toolBudgetPlugin, config: { maxCalls: 0 } }] })
        .build(),
    ).toThrow(/plugin "tool-budget" has an invalid config at "maxCalls"/);
  });
});
