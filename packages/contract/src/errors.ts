import { z } from 'zod';

/**
 * Every error code Lunation raises. One union, documented here:
 *
 * - `invalid-argument` — a caller passed a value that failed validation.
 * - `not-found` — a thread, run, ticket or other record does not exist.
 * - `thread-busy` — the thread already has an active run (in this or another process).
 * - `store-conflict` — a checkpoint's `expectedMessageCount` was stale; nothing was written.
 * - `stale-lease` — a write carried a fencing token older than the thread's current lease.
 * - `lease-lost` — the lease expired or was taken by another process while a run was alive.
 * - `claim-lost` — a dispatcher claim expired or was already completed, failed or handed back.
 * - `dead-lettered` — the thread's work was given up after failing repeatedly: new submissions wait in its inbox
 *   until an operator resubmits the thread (`DispatchAdmin.resubmit`).
 * - `store-unavailable` — the store's (or a dispatcher's) backend could not be reached, or is closed.
 * - `migration-failed` — a schema migration could not be applied.
 * - `cancelled` — the operation was aborted through its AbortSignal.
 * - `timeout` — the model provider timed out (408 / 504 / client timeout).
 * - `rate-limited` — the provider answered 429; `retryAfterMs` carries Retry-After.
 * - `quota-exceeded` — the account's quota or credit is used up (OpenAI's `insufficient_quota`); retrying does
 *   not help until its plan or billing changes, so it is not retryable.
 * - `overloaded` — the provider is overloaded (529 / 503), or a dispatcher's queue is at its depth cap.
 * - `provider-error` — the provider failed (500 / 502 or an error event).
 * - `unauthorized` — bad or missing credentials (401 / 403).
 * - `model-not-found` — the model does not exist (404).
 * - `context-overflow` — the request is larger than the model's context window.
 * - `invalid-request` — the provider rejected the request (400 / 413 / 422).
 * - `stream-interrupted` — a model stream was cut off mid-way.
 * - `content-filtered` — the provider refused to produce the content.
 * - `tool-not-found` — the model called a tool that does not exist.
 * - `tool-invalid-arguments` — tool arguments were not JSON or failed the tool's schema.
 * - `tool-execution-failed` — a tool threw.
 * - `plugin-config-invalid` — a plugin's config failed its schema.
 * - `build-invalid` — a runtime/builder definition has problems (all are listed).
 * - `duplicate-registration` — a key, hook, tool or handler was registered twice.
 * - `unknown-state-key` — a command touched a state key nobody registered.
 * - `state-conflict` — a state commit was based on a stale revision.
 * - `phase-loop-exceeded` — scheduled actions kept producing actions past the round limit.
 * - `decision-invalid` — a resume decision was malformed or failed the ticket's response schema.
 * - `unknown-ticket` — a decision named a ticket that is not open.
 * - `output-invalid` — the model's final answer did not match the run's output schema, also after repair.
 * - `mcp-unavailable` — an MCP server could not be started or reached, or its connection closed.
 * - `unsupported` — the store (or another part) cannot do what was asked, e.g. a transactional tool effect on
 *   a store without transactions.
 * - `specification-mismatch` — an adapter (model, store, dispatcher) declares another `specificationVersion`
 *   than the one this contract defines for its kind; raised when it is registered, before anything runs.
 * - `internal` — a bug: an invariant did not hold.
 */
export const errorCodeSchema = z.enum([
  'invalid-argument',
  'not-found',
  'thread-busy',
  'store-conflict',
  'stale-lease',
  'lease-lost',
  'claim-lost',
  'dead-lettered',
  'store-unavailable',
  'migration-failed',
  'cancelled',
  'timeout',
  'rate-limited',
  'quota-exceeded',
  'overloaded',
  'provider-error',
  'unauthorized',
  'model-not-found',
  'context-overflow',
  'invalid-request',
  'stream-interrupted',
  'content-filtered',
  'tool-not-found',
  'tool-invalid-arguments',
  'tool-execution-failed',
  'plugin-config-invalid',
  'build-invalid',
  'duplicate-registration',
  'unknown-state-key',
  'state-conflict',
  'phase-loop-exceeded',
  'decision-invalid',
  'unknown-ticket',
  'output-invalid',
  'mcp-unavailable',
  'unsupported',
  'specification-mismatch',
  'internal',
]);
/** One of the error codes listed on {@link errorCodeSchema}. */
export type ErrorCode = z.infer<typeof errorCodeSchema>;

const RETRYABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'timeout',
  'rate-limited',
  'overloaded',
  'provider-error',
  'stream-interrupted',
  'store-unavailable',
]);

const marker = Symbol.for('lunation.error');

/** Options of a {@link LunationError} beside its code and message. */
export interface LunationErrorOptions {
  cause?: unknown;
  /** Overrides the code's default retryability. */
  retryable?: boolean;
  /** For `rate-limited`: how long the provider asked us to wait. */
  retryAfterMs?: number;
  /** HTTP status, when the error came from an HTTP response. */
  status?: number;
  /** Structured details (ids, field paths, a list of problems). */
  details?: Record<string, unknown>;
}

/** The one error class of Lunation. Check with `LunationError.isInstance(value)`, not `instanceof`. */
export class LunationError extends Error {
  readonly [marker] = true;
  readonly code: ErrorCode;
  readonly isRetryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly status: number | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: LunationErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LunationError';
    this.code = code;
    this.isRetryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(code);
    this.retryAfterMs = options.retryAfterMs;
    this.status = options.status;
    this.details = options.details;
  }

  /** True for any LunationError, even one created by another copy of this package. */
  static isInstance(value: unknown): value is LunationError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }

  /** True when `value` is a LunationError with the given code. */
  static hasCode<C extends ErrorCode>(value: unknown, code: C): value is LunationError & { code: C } {
    return LunationError.isInstance(value) && value.code === code;
  }

  /** A JSON-safe summary, as carried in events and run records. */
  toJSON(): ErrorInfo {
    return {
      code: this.code,
      message: this.message,
      retryable: this.isRetryable,
      ...(this.details === undefined ? {} : { details: this.details }),
    };
  }
}

/** The serialised form of an error, as it appears in events and stored runs. */
export const errorInfoSchema = z.object({
  code: errorCodeSchema,
  message: z.string(),
  retryable: z.boolean(),
  details: z.record(z.string(), z.unknown()).optional(),
});
/** The JSON form of a {@link LunationError}: code, message, retryability and details. */
export type ErrorInfo = z.infer<typeof errorInfoSchema>;

/** Normalises anything thrown into an ErrorInfo (unknown throwables become `internal`). */
export function toErrorInfo(error: unknown): ErrorInfo {
  if (LunationError.isInstance(error)) return error.toJSON();
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'internal', message, retryable: false };
}
