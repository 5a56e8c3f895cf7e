import { z } from 'zod';
import { errorInfoSchema } from './errors.js';
import { jsonObjectSchema, jsonValueSchema } from './json.js';
import { messageSchema } from './messages.js';
import { stopReasonSchema, usageSchema } from './model.js';
import {
  resumeDecisionSchema,
  runIdentitySchema,
  runStatusSchema,
  suspensionTicketSchema,
  terminationReasonSchema,
  toolCallStatusSchema,
} from './run.js';
import { toolResultSchema } from './tools.js';

const base = {
  /** The run that produced the event (a child run's events carry the child's identity). */
  identity: runIdentitySchema,
  /** Position of the event in its run's stream, from 0. */
  seq: z.number().int().nonnegative(),
};

/** A run started (or continued an earlier waiting or interrupted run). */
export const runStartEventSchema = z.object({
  ...base,
  type: z.literal('run-start'),
  /** The new input messages of this run. */
  input: z.array(messageSchema),
  /** Set when the run continues an earlier waiting or interrupted run. */
  resumed: z.boolean(),
  timestamp: z.number(),
});
/** A step (one model call and its tool calls) started. */
export const stepStartEventSchema = z.object({
  ...base,
  type: z.literal('step-start'),
  step: z.number().int(),
});
/** A piece of the model's answer text. */
export const textDeltaEventSchema = z.object({
  ...base,
  type: z.literal('text-delta'),
  step: z.number().int(),
  delta: z.string(),
});
/** A piece of the model's reasoning text. */
export const reasoningDeltaEventSchema = z.object({
  ...base,
  type: z.literal('reasoning-delta'),
  step: z.number().int(),
  delta: z.string(),
});
/** The model started a tool call. */
export const toolCallStartEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-start'),
  step: z.number().int(),
  toolCallId: z.string(),
  toolName: z.string(),
});
/** A piece of a tool call's JSON arguments as the model streams them. */
export const toolCallDeltaEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-delta'),
  step: z.number().int(),
  toolCallId: z.string(),
  argumentsDelta: z.string(),
});
/** The model finished producing the call. */
export const toolCallEndEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-end'),
  step: z.number().int(),
  toolCallId: z.string(),
  toolName: z.string(),
  arguments: z.string(),
});
/** A tool began executing. `rerun` is true when an earlier attempt died mid-way (same idempotency key). */
export const toolExecutionStartEventSchema = z.object({
  ...base,
  type: z.literal('tool-execution-start'),
  step: z.number().int(),
  toolCallId: z.string(),
  toolName: z.string(),
  idempotencyKey: z.string(),
  rerun: z.boolean(),
});
/** Progress reported by a running tool. */
export const toolProgressEventSchema = z.object({
  ...base,
  type: z.literal('tool-progress'),
  toolCallId: z.string(),
  toolName: z.string(),
  progress: jsonValueSchema,
});
/** A tool call has its result (executed, set by a gate, replayed from the ledger, or an error). */
export const toolResultEventSchema = z.object({
  ...base,
  type: z.literal('tool-result'),
  step: z.number().int(),
  toolCallId: z.string(),
  toolName: z.string(),
  status: toolCallStatusSchema,
  result: toolResultSchema,
  /** True when the result came from the execution ledger instead of running the tool. */
  fromLedger: z.boolean(),
});
/** A tool call waits for a decision on its ticket. */
export const toolCallSuspendedEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-suspended'),
  ticket: suspensionTicketSchema,
});
/** A decision resumed a suspended tool call. */
export const toolCallResumedEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-resumed'),
  toolCallId: z.string(),
  decision: resumeDecisionSchema,
});
/** The run's state before `step-end` (only with `emitStateSnapshots`). */
export const stateSnapshotEventSchema = z.object({
  ...base,
  type: z.literal('state-snapshot'),
  revision: z.number().int(),
  state: jsonObjectSchema,
});
/** A step ended, with its stop reason and its own token usage (not a running total: `run-end` has the run's). */
export const stepEndEventSchema = z.object({
  ...base,
  type: z.literal('step-end'),
  step: z.number().int(),
  stopReason: stopReasonSchema.optional(),
  /** This step's token usage alone (its model calls, a compaction's included); the steps add up to the run's. */
  usage: usageSchema,
  /** A model call of the step reported no usage (its provider could not tell): `usage` does not count it. */
  usageUnknown: z.boolean().optional(),
});
/** The run ended: its status, termination, final text, steps, usage and open tickets. Always the last event. */
export const runEndEventSchema = z.object({
  ...base,
  type: z.literal('run-end'),
  status: runStatusSchema,
  termination: terminationReasonSchema,
  /** The text of the last assistant message ('' when there is none). */
  finalText: z.string(),
  steps: z.number().int().nonnegative(),
  /** Token usage summed over the run's model calls. */
  usage: usageSchema,
  openTickets: z.array(suspensionTicketSchema),
  timestamp: z.number(),
});
/** A non-fatal problem, or the cause of an `error` termination. */
export const errorEventSchema = z.object({ ...base, type: z.literal('error'), error: errorInfoSchema });

/**
 * Everything a run streams to callers, in this order per run: `run-start`; per step `step-start`, model deltas
 * and `tool-call-start/-delta/-end`, then per tool call `tool-execution-start`, `tool-progress`*, `tool-result`
 * or `tool-call-suspended`, then `state-snapshot` and `step-end`; finally `run-end`.
 */
export const agentEventSchema = z.discriminatedUnion('type', [
  runStartEventSchema,
  stepStartEventSchema,
  textDeltaEventSchema,
  reasoningDeltaEventSchema,
  toolCallStartEventSchema,
  toolCallDeltaEventSchema,
  toolCallEndEventSchema,
  toolExecutionStartEventSchema,
  toolProgressEventSchema,
  toolResultEventSchema,
  toolCallSuspendedEventSchema,
  toolCallResumedEventSchema,
  stateSnapshotEventSchema,
  stepEndEventSchema,
  runEndEventSchema,
  errorEventSchema,
]);
/** Any event a run streams; see {@link agentEventSchema} for the order. */
export type AgentEvent = z.infer<typeof agentEventSchema>;
/** The `type` of an {@link AgentEvent}. */
export type AgentEventType = AgentEvent['type'];
/** The event of a given type. */
export type AgentEventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>;

/** Receives every event of the runs it is registered for. `emit` must not throw; it may be async. */
export interface EventSink {
  /** Receives one event; must not throw. */
  emit(event: AgentEvent): void | Promise<void>;
  /** Called when the sink is no longer used. */
  close?(): void | Promise<void>;
}
