import { z } from 'zod';
import { definePlugin, defineStateKey, updateState } from '../src/index.js';

/** Counts tool calls per thread and blocks calls past a configured budget. */
const toolCallsUsed = defineStateKey<number>({
  name: 'toolBudget.used',
  schema: z.number().int(),
  initial: () => 0,
  scope: 'thread', // survives across runs of the thread (and is persisted by a store)
});

export const toolBudgetPlugin = definePlugin<{ maxCalls: number }>({
  name: 'tool-budget',
  configSchema: z.object({ maxCalls: z.number().int().positive() }),
  register(registrar) {
    registrar.stateKey(toolCallsUsed);
    registrar.toolGate((context) => {
      if (context.state.get(toolCallsUsed) < registrar.config.maxCalls) return undefined;
      return {
        type: 'set-result',
        result: { status: 'error', message: 'Tool budget exhausted; answer without tools.' },
      };
    });
    registrar.hook('AfterToolExecute', (context) => ({
      updates: [updateState(toolCallsUsed, context.state.get(toolCallsUsed) + 1)],
    }));
  },
});
