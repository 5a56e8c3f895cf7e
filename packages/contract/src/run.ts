import { z } from 'zod';
import { errorInfoSchema } from './errors.js';
import { jsonSchemaSchema, jsonValueSchema } from './json.js';

/** Who started a run: a user, a parent run (subagent) or the runtime itself. */
export const runOriginSchema = z.enum(['user', 'subagent', 'internal']);
/** Who started a run: a user, a parent run (subagent) or the runtime itself. */
export type RunOrigin = z.infer<typeof runOriginSchema>;

/** Who a run is: its thread, its own id, the agent, and (for child runs) its parent. */
export const runIdentitySchema = z.object({
  threadId: z.string().min(1),
  runId: z.string().min(1),
  agentId: z.string().min(1),
  parentRunId: z.string().min(1).optional(),
  parentToolCallId: z.string().min(1).optional(),
  origin: runOriginSchema,
});
/** Who a run is; see {@link runIdentitySchema}. */
export type RunIdentity = z.infer<typeof runIdentitySchema>;

/** created → running → (waiting ⇄ running) → done. */
export const runStatusSchema = z.enum(['created', 'running', 'waiting', 'done']);
/** Where a run is in its lifecycle; see {@link runStatusSchema}. */
export type RunStatus = z.infer<typeof runStatusSchema>;

/** Why a run ended. `suspended` and `awaiting-tasks` leave the run `waiting`; every other reason means `done`. */
export const terminationReasonSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('natural-end') }),
  z.object({ type: z.literal('stopped'), code: z.string().min(1), detail: z.string().optional() }),
  z.object({ type: z.literal('cancelled'), reason: z.string().optional() }),
  z.object({ type: z.literal('blocked'), reason: z.string() }),
  z.object({ type: z.literal('suspended') }),
  z.object({ type: z.literal('awaiting-tasks') }),
  z.object({ type: z.literal('error'), error: errorInfoSchema }),
]);
/** Why a run ended; see {@link terminationReasonSchema}. */
export type TerminationReason = z.infer<typeof terminationReasonSchema>;

/** The status a run has after ending for `reason`. */
export function statusForTermination(reason: TerminationReason): RunStatus {
  return reason.type === 'suspended' || reason.type === 'awaiting-tasks' ? 'waiting' : 'done';
}

/**
 * The lifecycle of one tool call: `new` → `allowed` | `denied` | `suspended`; `allowed` → `running` →
 * `succeeded` | `failed` (or `abandoned` when it never settled after a timeout or cancel); `suspended` →
 * `resuming` (decided) → `running`, or `cancelled`.
 */
export const toolCallStatusSchema = z.enum([
  'new',
  'allowed',
  'running',
  'suspended',
  'resuming',
  'succeeded',
  'failed',
  'denied',
  'cancelled',
  'abandoned',
]);
/** Where one tool call is in its lifecycle; see {@link toolCallStatusSchema}. */
export type ToolCallStatus = z.infer<typeof toolCallStatusSchema>;

/**
 * How a suspended call continues once decided:
 * - `replay-tool-call` — run the tool as called (an approval);
 * - `use-decision-as-result` — the decision payload is the tool result (a frontend tool run by the client);
 * - `pass-decision-to-tool` — run the tool with the decision available in its context.
 */
export const resumeModeSchema = z.enum([
  'replay-tool-call',
  'use-decision-as-result',
  'pass-decision-to-tool',
]);
/** How a suspended call continues once decided; see {@link resumeModeSchema}. */
export type ResumeMode = z.infer<typeof resumeModeSchema>;

/** Why a tool call waits, and what answer it needs. */
export const suspensionTicketSchema = z.object({
  id: z.string().min(1),
  toolCallId: z.string().min(1),
  toolName: z.string().min(1),
  /** The call's raw JSON arguments. */
  arguments: z.string(),
  /** What is being asked, e.g. `approve`, `input`, `frontend-tool`. */
  action: z.string().min(1),
  message: z.string(),
  parameters: jsonValueSchema.optional(),
  /** JSON Schema the decision payload must satisfy. */
  responseSchema: jsonSchemaSchema.optional(),
  resumeMode: resumeModeSchema,
  /** The run that suspended the call. */
  runId: z.string().min(1),
});
/** Why a tool call waits, and what answer it needs; see {@link suspensionTicketSchema}. */
export type SuspensionTicket = z.infer<typeof suspensionTicketSchema>;

/** An answer to a ticket. `decisionId` makes it idempotent: a repeated id is ignored. */
export const resumeDecisionSchema = z.object({
  decisionId: z.string().min(1),
  ticketId: z.string().min(1),
  action: z.enum(['resume', 'cancel']),
  payload: jsonValueSchema.optional(),
  reason: z.string().optional(),
});
/** An answer to a ticket; see {@link resumeDecisionSchema}. */
export type ResumeDecision = z.infer<typeof resumeDecisionSchema>;
