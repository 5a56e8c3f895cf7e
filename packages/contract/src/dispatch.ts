import { z } from 'zod';
import type { CancelSignals } from './dispatch-cancel.js';
import type { RunEventLog } from './dispatch-events.js';
import { errorInfoSchema } from './errors.js';
import { jsonSchemaSchema } from './json.js';
import { messageSchema } from './messages.js';
import { resumeDecisionSchema } from './run.js';
import { toolDescriptorSchema } from './tools.js';

/** Timestamps are epoch milliseconds. */
const timestamp = z.number().int().nonnegative();
const count = z.number().int().nonnegative();

/** A tool the client runs itself: the model sees it; a call suspends until a decision carries its result. */
export const frontendToolSchema = toolDescriptorSchema.extend({
  /** JSON Schema the client's result (the decision payload) must satisfy. */
  responseSchema: jsonSchemaSchema.optional(),
});
/** A client-side tool; see {@link frontendToolSchema}. */
export type FrontendToolDescriptor = z.infer<typeof frontendToolSchema>;

/** New messages for a thread: they start a run, or reach the run that is already open on the thread. */
export const inputRequestSchema = z.object({
  type: z.literal('input'),
  input: z.array(messageSchema).min(1),
  /** The agent to run. @default the thread's active agent */
  agentId: z.string().min(1).optional(),
  /**
   * The id of the run this input starts, chosen by the submitter so it can subscribe to the run's events
   * before a worker takes the thread. Ignored when the input joins a run already open on the thread.
   * @default an id the worker creates
   */
  runId: z.string().min(1).optional(),
  /** Client-side tools of the run this input starts. */
  frontendTools: z.array(frontendToolSchema).optional(),
});
/** New messages for a thread; see {@link inputRequestSchema}. */
export type InputRequest = z.infer<typeof inputRequestSchema>;

/** Answers to the thread's open tickets. */
export const decisionsRequestSchema = z.object({
  type: z.literal('decisions'),
  decisions: z.array(resumeDecisionSchema).min(1),
});
/** Answers to the thread's open tickets; see {@link decisionsRequestSchema}. */
export type DecisionsRequest = z.infer<typeof decisionsRequestSchema>;

/**
 * Continue the thread's run that was left `running` with nothing to continue it (its worker is gone and its
 * thread has no job): a sweep of the workers files it. Nothing happens once the run is no longer running.
 */
export const continueRequestSchema = z.object({
  type: z.literal('continue'),
  /** The stranded run. */
  runId: z.string().min(1),
});
/** Continue a stranded run; see {@link continueRequestSchema}. */
export type ContinueRequest = z.infer<typeof continueRequestSchema>;

/** What a submission asks of its thread: new input, decisions, or continuing a stranded run. */
export const dispatchRequestSchema = z.discriminatedUnion('type', [
  inputRequestSchema,
  decisionsRequestSchema,
  continueRequestSchema,
]);
/** What a submission asks of its thread; see {@link dispatchRequestSchema}. */
export type DispatchRequest = z.infer<typeof dispatchRequestSchema>;

/**
 * Work for one thread, durable once `submit` resolves. `id` is the idempotency key: submitting an id the
 * thread already has (pending, or acknowledged less than the dedupe window ago) changes nothing.
 */
export const submissionSchema = z.object({
  /** Unique per thread; a repeat is a no-op while the id is pending and for `dedupeWindowMs` after its acknowledgement. */
  id: z.string().min(1),
  threadId: z.string().min(1),
  /** The tenant (owner) of the thread: per-tenant figures and the per-tenant concurrency cap use it. */
  resourceId: z.string().min(1).optional(),
  request: dispatchRequestSchema,
});
/** Work for one thread; see {@link submissionSchema}. */
export type Submission = z.infer<typeof submissionSchema>;

/** A submission waiting in its thread's inbox, in submission order, until it is acknowledged. */
export const inboxEntrySchema = submissionSchema.extend({ submittedAt: timestamp });
/** A submission in its thread's inbox; see {@link inboxEntrySchema}. */
export type InboxEntry = z.infer<typeof inboxEntrySchema>;

/**
 * A worker's hold on one thread's job. It is not the thread lease: the store's lease with its fencing token
 * still decides who runs the thread; a claim only says which worker was handed the thread's work.
 */
export const dispatchClaimSchema = z.object({
  threadId: z.string().min(1),
  resourceId: z.string().min(1).optional(),
  workerId: z.string().min(1),
  /** 1 on the first attempt, one more after each failure that was retried. */
  attempt: z.number().int().positive(),
  /** Opaque; names this claim in `extend`, `complete`, `fail` and `handBack`. */
  token: z.string().min(1),
  claimedAt: timestamp,
});
/** A worker's hold on one thread's job; see {@link dispatchClaimSchema}. */
export type DispatchClaim = z.infer<typeof dispatchClaimSchema>;

/** The figures of one tenant (`resourceId`). */
export const resourceDepthSchema = z.object({
  /** Submissions not yet acknowledged. */
  pending: count,
  /** Threads claimed now. */
  active: count,
  /** Threads dead-lettered. */
  deadLettered: count,
});
/** The figures of one tenant; see {@link resourceDepthSchema}. */
export type ResourceDepth = z.infer<typeof resourceDepthSchema>;

/** Queue figures: threads by state, pending submissions, totals, and per tenant. */
export const dispatchDepthSchema = z.object({
  /** Threads with work, ready to be claimed. */
  waiting: count,
  /** Threads claimed by a worker now. */
  active: count,
  /** Threads waiting out a retry backoff or a hand-back delay. */
  delayed: count,
  /** Threads whose attempts ran out, or whose failure was not retryable; see `deadLetters()`. */
  deadLettered: count,
  /** Submissions not yet acknowledged, over every thread. */
  pending: count,
  /** Claims completed since the backend was created. */
  completed: count,
  /** Failed attempts (retried or dead-lettered) since the backend was created. */
  failed: count,
  /** Per tenant, for tenants with a non-zero figure. */
  byResource: z.record(z.string(), resourceDepthSchema),
});
/** Queue figures; see {@link dispatchDepthSchema}. */
export type DispatchDepth = z.infer<typeof dispatchDepthSchema>;

/** A thread whose work was given up: its last error and its attempts. Its inbox keeps its submissions. */
export const deadLetterSchema = z.object({
  threadId: z.string().min(1),
  resourceId: z.string().min(1).optional(),
  /** Attempts made before it was dead-lettered. */
  attempts: z.number().int().positive(),
  error: errorInfoSchema,
  deadLetteredAt: timestamp,
  /** Submissions still in its inbox. */
  pending: count,
});
/** A dead-lettered thread; see {@link deadLetterSchema}. */
export type DeadLetter = z.infer<typeof deadLetterSchema>;

/** Exponential backoff between retries: `initialMs * factor^(attempt - 1)`, at most `maxMs`. */
export interface DispatchBackoff {
  /** Delay before the second attempt. @default 1000 */
  initialMs?: number;
  /** Growth per attempt. @default 2 */
  factor?: number;
  /** Upper bound of any delay. @default 60000 */
  maxMs?: number;
}

/** What every dispatcher can be told about retries, caps and retention. Backends add their own options. */
export interface DispatchPolicy {
  /** Attempts before a thread is dead-lettered (failures retried: `maxAttempts - 1`). @default 5 */
  maxAttempts?: number;
  /** Delays between retries. */
  backoff?: DispatchBackoff;
  /**
   * `submit` rejects with `overloaded` (retryable) while this many threads wait to be claimed (waiting +
   * delayed). @default no cap
   */
  maxDepth?: number;
  /** At most this many threads of one tenant (`resourceId`) are claimed at once. @default no cap */
  maxActivePerResource?: number;
  /** A run's event log keeps its latest this-many events. @default 10000 */
  maxEventsPerRun?: number;
  /**
   * How long after its acknowledgement a submission id still counts as a duplicate (a pending id always does,
   * however long it waits); after that the id is forgotten and the same id is new work. Backends document a
   * default.
   */
  dedupeWindowMs?: number;
}

/** What {@link WorkQueue.claim} takes. */
export interface ClaimOptions {
  /** Who claims, for diagnostics (e.g. a process id). */
  workerId: string;
  /** How long the claim holds without `extend`, and what `extend` without `lockMs` renews. @default the dispatcher's own default */
  lockMs?: number;
  /** How long to wait for a thread when none is ready. @default 0 */
  waitMs?: number;
  /** Aborting stops waiting: the call resolves `undefined`, as after `waitMs`. */
  signal?: AbortSignal;
}

/** What {@link WorkQueue.fail} takes beside the error. */
export interface FailOptions {
  /** Whether to retry (after a backoff) or dead-letter now. @default the error's `isRetryable`, else false */
  retryable?: boolean;
}

/** What {@link WorkQueue.fail} did. */
export interface FailResult {
  /** True when the thread was dead-lettered; false when it will be retried. */
  deadLettered: boolean;
  /** When a retry becomes claimable (epoch ms); absent when dead-lettered. */
  retryAt?: number;
}

/** What {@link WorkQueue.handBack} takes. */
export interface HandBackOptions {
  /** How long before the thread can be claimed again. @default 0 */
  delayMs?: number;
}

/** What {@link WorkQueue.complete} did. */
export interface CompleteResult {
  /** True when submissions arrived meanwhile, so the thread waits to be claimed again. */
  rewoken: boolean;
}

/** What {@link SubmissionQueue.submit} did. */
export interface SubmitResult {
  /** True when the thread already had this submission id; nothing changed. */
  duplicate: boolean;
  /**
   * True when the thread is dead-lettered: the submission is kept in its inbox, but nothing runs it until
   * `resubmit` (see `deadLetters()`).
   */
  deadLettered: boolean;
}

/** Paging of {@link DispatchAdmin.deadLetters}. */
export interface DeadLetterListOptions {
  /** @default 100 */
  limit?: number;
}

/** The producer side: any process can submit work to a thread. */
export interface SubmissionQueue {
  /**
   * Adds the submission to its thread's inbox and wakes the thread (one job per thread, until its inbox is
   * empty). Durable when it resolves. Rejects with `overloaded` at the depth cap and `invalid-argument` for a
   * malformed submission.
   */
  submit(submission: Submission): Promise<SubmitResult>;
}

/**
 * The worker side, pull-based: claim a thread, read its inbox, acknowledge what was committed, then complete,
 * fail or hand the thread back.
 */
export interface WorkQueue {
  /** Claims one thread with work (oldest first), or resolves `undefined` after `waitMs` or an abort. */
  claim(options: ClaimOptions): Promise<DispatchClaim | undefined>;
  /**
   * Keeps the claim for `lockMs` more; `claim-lost` when it expired or was released. Without `lockMs`, for the lock
   * the claim was made with (its `claim` call's `lockMs`, or the dispatcher's default when that gave none), on any
   * instance of the dispatcher: not the dispatcher's default.
   */
  extend(claim: DispatchClaim, lockMs?: number): Promise<void>;
  /** The thread's unacknowledged submissions, in submission order. */
  pending(threadId: string): Promise<InboxEntry[]>;
  /** Removes these submissions from the inbox once their effect is committed; resolves how many it removed. */
  acknowledge(threadId: string, submissionIds: readonly string[]): Promise<number>;
  /**
   * Ends the claim: the thread has nothing left to do now. When submissions arrived meanwhile, the thread waits
   * to be claimed again (`rewoken`). `claim-lost` when the claim expired or was released.
   */
  complete(claim: DispatchClaim): Promise<CompleteResult>;
  /**
   * Ends the claim with a failure: retried after a backoff while attempts remain and the failure is
   * retryable, else dead-lettered. `claim-lost` when the claim expired or was released.
   */
  fail(claim: DispatchClaim, error: unknown, options?: FailOptions): Promise<FailResult>;
  /**
   * Gives the thread back without counting a failure (its lease is held elsewhere, or the worker shuts down);
   * claimable again after `delayMs`. `claim-lost` when the claim expired or was released.
   */
  handBack(claim: DispatchClaim, options?: HandBackOptions): Promise<void>;
}

/** Figures and dead letters, for operators. */
export interface DispatchAdmin {
  /** Queue figures now. */
  depth(): Promise<DispatchDepth>;
  /** Dead-lettered threads, oldest first. */
  deadLetters(options?: DeadLetterListOptions): Promise<DeadLetter[]>;
  /** Makes a dead-lettered thread claimable again with fresh attempts; false when it was not dead-lettered. */
  resubmit(threadId: string): Promise<boolean>;
}

/**
 * Moves work between processes: per-thread inboxes of submissions, one job per thread that workers claim, cancel
 * requests and run event logs. Version `v2` of the interface (v2: fenced run event logs, nothing after the end
 * mark, `SubmitResult.deadLettered`, lost claims never dead-letter). Every dispatcher passes
 * `@lunation/dispatch-testkit`.
 *
 * @remarks Rules the conformance kit checks, beyond each method's own description:
 * - A thread is claimed by at most one worker at a time; a claim whose lock expires is lost, and the thread
 *   goes to the next claimer with every unacknowledged submission, in order.
 * - A thread is claimable while its inbox has submissions and it is neither claimed, delayed nor
 *   dead-lettered. Threads first submitted one after another are claimed in that order; a tenant at its cap
 *   is skipped, not waited for.
 * - A submission that arrives while its thread is claimed waits for that claim to end: `complete` re-wakes the
 *   thread, `fail` and `handBack` keep it.
 * - A dead-lettered thread keeps new submissions in its inbox until `resubmit`, and `submit` says so
 *   (`deadLettered`).
 * - Losing a claim is never a failure: only `fail` counts toward dead-lettering, however often a thread's claims
 *   are lost (a worker died or stalled past its lock).
 * - Nothing completes the claim on the worker's behalf: a lock expiry is the only way a claim ends by itself.
 * - A claim's lock is the one it was made with (`ClaimOptions.lockMs`, else the dispatcher's default): `extend`
 *   without `lockMs` renews that lock, on whichever instance of the dispatcher it is called; a dispatcher's
 *   default lock applies only to a claim made without `lockMs`.
 */
export interface Dispatcher extends SubmissionQueue, WorkQueue, DispatchAdmin, CancelSignals, RunEventLog {
  /**
   * The version of this interface the dispatcher implements; the runtime refuses a dispatcher declaring
   * another one (`specification-mismatch`). See `specificationVersions`.
   */
  readonly specificationVersion: 'v3';
  /** A short name for diagnostics, e.g. `local` or `bullmq`. */
  readonly kind: string;
  /**
   * Stops this instance: waiting claims resolve `undefined`, subscriptions and cancel watches end, claims it
   * still holds are handed back, and connections it opened are closed (injected clients stay open).
   */
  close(): Promise<void>;
}
