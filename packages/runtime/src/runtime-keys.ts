import {
  emptyUsage,
  type JsonSchema,
  type ModelOverrides,
  type Usage,
  usageSchema,
} from '@lunation/contract';
import { z } from 'zod';
import { type Command, defineAction } from './command.js';
import { definePlugin } from './plugin.js';
import { defineStateKey, updateState } from './state.js';

/** The loop's own per-run bookkeeping. */
export interface RunProgress {
  step: number;
  usage: Usage;
  consecutiveToolErrors: number;
  startedAt: number;
}

/**
 * The loop's per-run bookkeeping: step, usage, consecutive tool errors, start time. Not persisted: the run record
 * keeps the steps and usage, and a resumed run starts its counters and clock again from those.
 */
export const runProgressKey = defineStateKey<RunProgress>({
  name: 'runtime.progress',
  persistent: false,
  schema: z.object({
    step: z.number(),
    usage: usageSchema,
    consecutiveToolErrors: z.number(),
    startedAt: z.number(),
  }),
  initial: () => ({ step: 0, usage: emptyUsage(), consecutiveToolErrors: 0, startedAt: 0 }),
});

/** A run's output schema (JSON Schema) and the repair rounds it used. */
export interface OutputState {
  schema: JsonSchema;
  repairsUsed: number;
}

/**
 * The output schema of a run as JSON Schema, kept with the run (run scope) so that a run resumed in another
 * process — where only the agent definition is known — still validates its final answer.
 */
export const outputKey = defineStateKey<OutputState | null>({
  name: 'runtime.output',
  schema: z.object({ schema: z.record(z.string(), z.unknown()), repairsUsed: z.number() }).nullable(),
  initial: () => null,
});

/**
 * The trace context of a run that suspended (see `Instrumentation`), kept with the run so that the run resuming
 * it, in any process, can link to it. Written only when the runtime has instrumentation.
 */
export const traceContextKey = defineStateKey<Record<string, string> | null>({
  name: 'runtime.traceContext',
  schema: z.record(z.string(), z.string()).nullable(),
  initial: () => null,
});

const APPLIED_DECISIONS_KEPT = 500;

/** Ids of decisions already applied on this thread, newest last (bounded). */
export const appliedDecisionsKey = defineStateKey<string[], string[]>({
  name: 'runtime.appliedDecisions',
  schema: z.array(z.string()),
  initial: () => [],
  scope: 'thread',
  apply: (value, ids) => {
    const next = [...value, ...ids];
    return next.length > APPLIED_DECISIONS_KEPT ? next.slice(next.length - APPLIED_DECISIONS_KEPT) : next;
  },
});

/** The thread's active agent (changed by a handoff). */
export const activeAgentKey = defineStateKey<string | null>({
  name: 'runtime.activeAgent',
  schema: z.string().nullable(),
  initial: () => null,
  scope: 'thread',
});

/** A command that hands the thread over to another agent from the next step on (same history). */
export function handoffTo(agentId: string): Command {
  return { updates: [updateState(activeAgentKey, agentId)] };
}

/** Tools approved for the whole thread ("always allow"). */
export const allowedToolsKey = defineStateKey<string[], string>({
  name: 'runtime.allowedTools',
  schema: z.array(z.string()),
  initial: () => [],
  scope: 'thread',
  apply: (value, name) => (value.includes(name) ? value : [...value, name]),
});

/** A message added to the next model request only. */
export interface ContextMessage {
  /** Deduplicates: a later message with the same key replaces an earlier one. */
  key: string;
  role: 'system' | 'user';
  text: string;
  /** Where it goes: after the system prompt, or at the end of the conversation. @default 'end' */
  position?: 'system' | 'end';
}

export interface RequestAdjustments {
  contextMessages: ContextMessage[];
  overrides: ModelOverrides;
  excludedTools: string[];
  onlyTools: string[] | null;
}

export type RequestAdjustment =
  | { type: 'context'; message: ContextMessage }
  | { type: 'overrides'; overrides: ModelOverrides }
  | { type: 'exclude'; tools: string[] }
  | { type: 'only'; tools: string[] }
  | { type: 'reset' };

const emptyAdjustments = (): RequestAdjustments => ({
  contextMessages: [],
  overrides: {},
  excludedTools: [],
  onlyTools: null,
});

/** Accumulates what BeforeInference actions ask of the next request; the loop reads and resets it. */
export const requestAdjustmentsKey = defineStateKey<RequestAdjustments, RequestAdjustment>({
  name: 'runtime.requestAdjustments',
  schema: z.any() as z.ZodType<RequestAdjustments>,
  initial: emptyAdjustments,
  persistent: false,
  merge: 'commutative',
  apply: (value, update) => {
    switch (update.type) {
      case 'context':
        return {
          ...value,
          contextMessages: [
            ...value.contextMessages.filter((message) => message.key !== update.message.key),
            update.message,
          ],
        };
      case 'overrides':
        return { ...value, overrides: { ...value.overrides, ...update.overrides } };
      case 'exclude':
        return { ...value, excludedTools: [...value.excludedTools, ...update.tools] };
      case 'only':
        return {
          ...value,
          onlyTools: value.onlyTools
            ? value.onlyTools.filter((name) => update.tools.includes(name))
            : update.tools,
        };
      case 'reset':
        return emptyAdjustments();
    }
  },
});

/** Built-in BeforeInference actions. */
export const addContextMessage = defineAction<ContextMessage>('runtime.addContextMessage', 'BeforeInference');
/** A BeforeInference action that sets model settings for the next request. */
export const setInferenceOverrides = defineAction<ModelOverrides>(
  'runtime.setInferenceOverrides',
  'BeforeInference',
);
/** A BeforeInference action that hides tools from the next request. */
export const excludeTools = defineAction<string[]>('runtime.excludeTools', 'BeforeInference');
/** A BeforeInference action that offers only these tools in the next request. */
export const includeOnlyTools = defineAction<string[]>('runtime.includeOnlyTools', 'BeforeInference');

/** Registers the loop's keys and built-in action handlers; part of every agent. */
export const corePlugin = definePlugin({
  name: 'runtime',
  register(registrar) {
    registrar.stateKey(runProgressKey);
    registrar.stateKey(outputKey);
    registrar.stateKey(traceContextKey);
    registrar.stateKey(appliedDecisionsKey);
    registrar.stateKey(activeAgentKey);
    registrar.stateKey(allowedToolsKey);
    registrar.stateKey(requestAdjustmentsKey);
    registrar.onAction(addContextMessage, (message) => ({
      updates: [{ key: requestAdjustmentsKey, update: { type: 'context', message } }],
    }));
    registrar.onAction(setInferenceOverrides, (overrides) => ({
      updates: [{ key: requestAdjustmentsKey, update: { type: 'overrides', overrides } }],
    }));
    registrar.onAction(excludeTools, (tools) => ({
      updates: [{ key: requestAdjustmentsKey, update: { type: 'exclude', tools } }],
    }));
    registrar.onAction(includeOnlyTools, (tools) => ({
      updates: [{ key: requestAdjustmentsKey, update: { type: 'only', tools } }],
    }));
  },
});
