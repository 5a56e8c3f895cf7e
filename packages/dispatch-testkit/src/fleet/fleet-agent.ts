import type { LunationStore } from '@lunation/contract';
import { type AgentRuntime, createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { z } from 'zod';

/** What the kit's agent's `wait` tool does where it runs (the test process, or a worker process to be killed). */
export type WaitTool = (idempotencyKey: string, signal: AbortSignal) => Promise<string>;

/** What the kit's agent's tools tell the test. */
export interface FleetAgentHooks {
  /** The `note` tool ran (it needs an approval first). */
  onNote?(text: string, idempotencyKey: string): void;
  /** The `wait` tool. */
  wait: WaitTool;
}

/** A thread lease that lapses soon after its worker died, so a successor takes the run over quickly. */
export const fleetLeaseTtlMs = 1_500;

/** The scripted model: its next answer follows from the conversation alone, so any worker continues it. */
function fleetModel(): ScriptedModel {
  return new ScriptedModel((request) => {
    const firstUser = request.messages.find((message) => message.role === 'user');
    const text = firstUser?.content[0]?.type === 'text' ? firstUser.content[0].text : '';
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    const steps: ScriptedResponse[] = text.startsWith('note ')
      ? [{ toolCalls: [{ toolName: 'note', arguments: { text: text.slice(5) } }] }]
      : text === 'wait'
        ? [{ toolCalls: [{ toolName: 'wait', arguments: {} }] }]
        : [];
    return steps[answered] ?? { text: `done: ${text}` };
  });
}

/**
 * The runtime every worker and client of the fleet specs builds, on the store they share: one agent whose `note`
 * tool needs an approval and whose `wait` tool does what the process it runs in says.
 */
export function fleetRuntime(store: LunationStore, hooks: FleetAgentHooks): AgentRuntime {
  const note = defineTool({
    name: 'note',
    description: 'Writes a note (after an approval)',
    input: z.object({ text: z.string() }),
    execute: ({ text }, context) => {
      hooks.onNote?.(text, context.idempotencyKey);
      return `noted ${text}`;
    },
  });
  const wait = defineTool({
    name: 'wait',
    description: 'Waits for whatever the test says',
    input: z.object({}),
    execute: (_, context) => hooks.wait(context.idempotencyKey, context.signal),
  });
  return createRuntime()
    .model('scripted', fleetModel())
    .agent({
      id: 'kit-agent',
      model: 'scripted',
      tools: [note, wait],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'note', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ leaseTtlMs: fleetLeaseTtlMs })
    .build();
}
