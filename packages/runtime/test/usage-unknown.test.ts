import type { AgentEvent, Instrumentation, ModelCallOutcome, Usage } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, definePlugin, defineTool, type PhaseContext } from '../src/index.js';
import { ScriptedModel } from '../src/testing/index.js';

// A provider that cannot tell a call's usage streams `{ type: 'usage', unknown: true }` (contract: its numbers
// are not counts). The run's totals must not count them, and whoever reads the call's usage must be told.

const usage = (inputTokens: number, outputTokens: number): Usage => ({
  inputTokens,
  outputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});

describe('usage a provider reports as unknown', () => {
  it('is not counted, and the model call, its response and its step say it is unknown', async () => {
    const model = new ScriptedModel([
      {
        parts: [
          { type: 'tool-call-start', toolCallId: 'c1', toolName: 'look' },
          { type: 'tool-call-end', toolCallId: 'c1', toolName: 'look', arguments: '{}' },
          { type: 'usage', usage: usage(10, 5) },
          { type: 'finish', stopReason: 'tool-use' },
        ],
      },
      {
        parts: [
          { type: 'text-delta', delta: 'done' },
          // An incomplete response's placeholder: not counts, whatever the numbers say.
          { type: 'usage', usage: usage(3, 1), unknown: true },
          { type: 'finish', stopReason: 'end-turn' },
        ],
      },
    ]);
    const outcomes: ModelCallOutcome[] = [];
    const instrumentation: Instrumentation = {
      runStarted: () => ({
        modelCallStarted: () => ({ end: (outcome) => outcomes.push(outcome) }),
        toolCallStarted: () => ({ end: () => {} }),
        checkpointStarted: () => ({ end: () => {} }),
        ledgerHit: () => {},
        toolCallSuspended: () => {},
        toolCallResumed: () => {},
        lease: () => {},
        suspendContext: () => undefined,
        runEnded: () => {},
      }),
    };
    const responses: Array<{ usage: Usage; usageUnknown: boolean | undefined }> = [];
    const observer = definePlugin({
      name: 'usage-observer',
      register(registrar) {
        registrar.hook('AfterInference', (context: PhaseContext) => {
          const response = context.response;
          if (response) responses.push({ usage: response.usage, usageUnknown: response.usageUnknown });
          return {};
        });
      },
    });
    const look = defineTool({
      name: 'look',
      description: 'Looks',
      input: z.object({}),
      execute: () => 'seen',
    });
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [look], plugins: [{ plugin: observer }] })
      .store(new MemoryStore())
      .instrumentation(instrumentation)
      .build();
    const handle = await runtime.run({ threadId: 't', input: 'go' });
    const events: AgentEvent[] = [];
    for await (const event of handle.events) events.push(event);
    const result = await handle.result;

    expect(result.usage).toEqual(usage(10, 5));
    expect(responses).toEqual([
      { usage: usage(10, 5), usageUnknown: undefined },
      { usage: usage(0, 0), usageUnknown: true },
    ]);
    expect(outcomes.map((outcome) => outcome.usage)).toEqual([usage(10, 5), undefined]);
    const steps = events.filter((event) => event.type === 'step-end');
    expect(steps.map((event) => [event.usage, event.usageUnknown])).toEqual([
      [usage(10, 5), undefined],
      [usage(0, 0), true],
    ]);
  });
});
