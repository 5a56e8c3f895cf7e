import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, collectEvents, eventsOfType, reply, ScriptedModel } from '../src/testing/index.js';

const ping = defineTool({ name: 'ping', description: 'Pings', input: z.object({}), execute: () => 'pong' });

function tokens(usage: { inputTokens: number; outputTokens: number }) {
  return [usage.inputTokens, usage.outputTokens];
}

describe('step-end usage', () => {
  it("carries each step's own usage, and run-end the run's total", async () => {
    const model = new ScriptedModel([
      callTool('ping', {}, { usage: { inputTokens: 40, outputTokens: 10 } }),
      reply('Done.', { usage: { inputTokens: 100, outputTokens: 5 } }),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [ping] })
      .build();
    const handle = await runtime.run({ threadId: 't1', input: 'Ping' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;
    expect(eventsOfType(events, 'step-end').map((event) => [event.step, ...tokens(event.usage)])).toEqual([
      [1, 40, 10],
      [2, 100, 5],
    ]);
    expect(tokens(eventsOfType(events, 'run-end')[0]!.usage)).toEqual([140, 15]);
    expect(tokens(result.usage)).toEqual([140, 15]);
  });

  it('a resumed run reports its new steps alone on step-end and the total so far on run-end', async () => {
    const model = new ScriptedModel([
      callTool('ping', {}, { usage: { inputTokens: 40, outputTokens: 10 } }),
      reply('Done.', { usage: { inputTokens: 100, outputTokens: 5 } }),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [ping],
        plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'ping', decision: 'ask' }] } }],
      })
      .build();
    const first = await runtime.run({ threadId: 't1', input: 'Ping' });
    const firstEvents = await collectEvents(first.events);
    const suspended = await first.result;
    expect(suspended.status).toBe('waiting');
    expect(
      eventsOfType(firstEvents, 'step-end').map((event) => [event.step, ...tokens(event.usage)]),
    ).toEqual([[1, 40, 10]]);
    const ticket = suspended.openTickets[0]!;
    const outcome = await runtime.sendDecisions(first.runId, [
      { decisionId: 'd1', ticketId: ticket.id, action: 'resume' },
    ]);
    const events = await collectEvents(outcome.run?.events ?? []);
    expect(eventsOfType(events, 'step-end').map((event) => [event.step, ...tokens(event.usage)])).toEqual([
      [2, 100, 5],
    ]);
    expect(tokens(eventsOfType(events, 'run-end')[0]!.usage)).toEqual([140, 15]);
  });

  it('a session reports each step once, so the step-end usages add up to the run-end total', async () => {
    const model = new ScriptedModel([
      reply('One.', { usage: { inputTokens: 40, outputTokens: 10 } }),
      reply('Two.', { usage: { inputTokens: 100, outputTokens: 5 } }),
    ]);
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const session = runtime.session('s1');
    expect(await session.send('first')).toBe('One.');
    expect(await session.send('second')).toBe('Two.');
    await session.close();
    const events = await collectEvents(session.events!);
    expect(eventsOfType(events, 'step-end').map((event) => [event.step, ...tokens(event.usage)])).toEqual([
      [1, 40, 10],
      [2, 100, 5],
    ]);
    expect(tokens(eventsOfType(events, 'run-end')[0]!.usage)).toEqual([140, 15]);
  });
});
