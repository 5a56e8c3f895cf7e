import type { LunationStore } from '@lunation/contract';
import { type AgentRuntime, createRuntime, defineTool } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { z } from 'zod';

/**
 * W5's agent: S = 3 steps (two `work` calls, then "done"), the model awaiting `modelDelayMs` on every call. A
 * run's first message says how long its tool takes (`work <ms>`), so a run can be made long enough to be killed
 * mid-tool. The model answers from the conversation alone, so any worker continues any run.
 */
export function createW5Runtime(options: {
  store: LunationStore;
  modelDelayMs: number;
  leaseTtlMs: number;
  owner: string;
}): AgentRuntime {
  const work = defineTool({
    name: 'work',
    description: 'Works for durationMs',
    input: z.object({ durationMs: z.number().int().nonnegative() }),
    execute: async ({ durationMs }) => {
      if (durationMs > 0) await new Promise((resolve) => setTimeout(resolve, durationMs));
      return { ok: true };
    },
  });
  const model = new ScriptedModel((request): ScriptedResponse => {
    const first = request.messages.find((message) => message.role === 'user')?.content[0];
    const durationMs = first?.type === 'text' ? Number(first.text.split(' ')[1] ?? 0) : 0;
    const step = request.messages.filter((message) => message.role === 'assistant').length;
    if (step >= 2) return { text: 'done', delayMs: options.modelDelayMs };
    return {
      toolCalls: [{ toolCallId: `w5-${step}`, toolName: 'work', arguments: { durationMs } }],
      delayMs: options.modelDelayMs,
    };
  });
  return createRuntime()
    .model('m', model)
    .agent({ id: 'w5', model: 'm', tools: [work] })
    .store(options.store)
    .options({ leaseTtlMs: options.leaseTtlMs, owner: options.owner })
    .build();
}
