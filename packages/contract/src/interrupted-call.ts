import { z } from 'zod';
import { jsonValueSchema } from './json.js';

/**
 * The `action` of a ticket asking a person about an interrupted call: recovery found the call started but not
 * finished (the process died in between), and its tool's interrupt policy is `ask`.
 */
export const INTERRUPTED_CALL_ACTION = 'interrupted-call';

/**
 * What recovery does with a call it finds started but not finished (the crash window):
 * - `rerun` — run it again with the same idempotency key and `rerun: true` (at-least-once);
 * - `fail` — never run it again: the model gets an error result saying it was interrupted and may or may not
 *   have taken effect (at-most-once);
 * - `ask` — an `interrupted-call` ticket: a person decides (see {@link interruptedCallPayloadSchema}).
 */
export const interruptPolicySchema = z.enum(['rerun', 'fail', 'ask']);
/** What recovery does with a call it finds in flight; see {@link interruptPolicySchema}. */
export type InterruptPolicy = z.infer<typeof interruptPolicySchema>;

/**
 * The payload of a `resume` decision on an `interrupted-call` ticket: `rerun` runs the call again (`rerun:
 * true`), `done` treats it as done with `result` as its data (and `message`, if given, as what the model
 * reads), `fail` gives it an error result (with `message`, if given). A `cancel` decision is `fail`.
 */
export const interruptedCallPayloadSchema = z.object({
  choice: z.enum(['rerun', 'done', 'fail']),
  result: jsonValueSchema.optional(),
  message: z.string().optional(),
});
/** The payload of a decision on an `interrupted-call` ticket; see {@link interruptedCallPayloadSchema}. */
export type InterruptedCallPayload = z.infer<typeof interruptedCallPayloadSchema>;
