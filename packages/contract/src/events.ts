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

export const runStartEventSchema = z.object({
  ...base,
  type: z.literal('run-start'),
  /** The new input messages of this run. */
  input: z.array(messageSchema),
  /** Set when the run continues an earlier waiting or interrupted run. */
  resumed: z.boolean(),
  timestamp: z.number(),
});
export const stepStartEventSchema = z.object({
  ...base,
  type: z.literal('step-start'),
  step: z.number().int(),
});
export const textDeltaEventSchema = z.object({
  ...base,
  type: z.literal('text-delta'),
  step: z.number().int(),
  delta: z.string(),
});
export const reasoningDeltaEventSchema = z.object({
  ...base,
  type: z.literal('reasoning-delta'),
  step: z.number().int(),
  delta: z.string(),
});
export const toolCallStartEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-start'),
  step: z.number().int(),
  toolCallId: z.string(),
  toolName: z.string(),
});
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
export const toolCallSuspendedEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-suspended'),
  ticket: suspensionTicketSchema,
});
export const toolCallResumedEventSchema = z.object({
  ...base,
  type: z.literal('tool-call-resumed'),
  toolCallId: z.string(),
  decision: resumeDecisionSchema,
});
export const stateSnapshotEventSchema = z.object({
  ...base,
  type: z.literal('state-snapshot'),
  revision: z.number().int(),
  state: jsonObjectSchema,
});
export const stepEndEventSchema = z.object({
  ...base,
  type: z.literal('step-end'),
  step: z.number().int(),
  stopReason: stopReasonSchema.optional(),
  usage: usageSchema,
});
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
export type AgentEvent = z.infer<typeof agentEventSchema>;
export type AgentEventType = AgentEvent['type'];
/** The event of a given type. */
export type AgentEventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>;

/** Receives every event of the runs it is registered for. `emit` must not throw; it may be async. */
export interface EventSink {
  emit(event: AgentEvent): void | Promise<void>;
  close?(): void | Promise<void>;
}
