import type { DispatchBackoff, DispatchClaim, DispatchPolicy, Submission } from '../dispatch.js';
import { LunationError } from '../errors.js';
import { assertId, assertInteger, assertObject } from '../store-utils/store-input.js';

// Input checks and policy rules every dispatcher applies the same way.

/** A {@link DispatchPolicy} with every default applied; the caps are `Infinity` when not set. */
export interface ResolvedDispatchPolicy {
  maxAttempts: number;
  backoff: Required<DispatchBackoff>;
  maxDepth: number;
  maxActivePerResource: number;
  maxEventsPerRun: number;
  dedupeWindowMs: number;
}

/** The defaults of {@link DispatchPolicy} that every dispatcher shares. */
export const dispatchPolicyDefaults = {
  maxAttempts: 5,
  backoff: { initialMs: 1_000, factor: 2, maxMs: 60_000 },
  maxEventsPerRun: 10_000,
} as const;

/**
 * Checks a policy and applies the defaults (`dedupeWindowMs` is the backend's own); `invalid-argument` names
 * the first bad field.
 */
export function resolveDispatchPolicy(
  policy: DispatchPolicy,
  backendDefaults: { dedupeWindowMs: number },
): ResolvedDispatchPolicy {
  const backoff = policy.backoff ?? {};
  const resolved: ResolvedDispatchPolicy = {
    maxAttempts: policy.maxAttempts ?? dispatchPolicyDefaults.maxAttempts,
    backoff: {
      initialMs: backoff.initialMs ?? dispatchPolicyDefaults.backoff.initialMs,
      factor: backoff.factor ?? dispatchPolicyDefaults.backoff.factor,
      maxMs: backoff.maxMs ?? dispatchPolicyDefaults.backoff.maxMs,
    },
    maxDepth: policy.maxDepth ?? Number.POSITIVE_INFINITY,
    maxActivePerResource: policy.maxActivePerResource ?? Number.POSITIVE_INFINITY,
    maxEventsPerRun: policy.maxEventsPerRun ?? dispatchPolicyDefaults.maxEventsPerRun,
    dedupeWindowMs: policy.dedupeWindowMs ?? backendDefaults.dedupeWindowMs,
  };
  assertInteger(resolved.maxAttempts, 'maxAttempts', 1);
  assertInteger(resolved.backoff.initialMs, 'backoff.initialMs', 0);
  if (typeof resolved.backoff.factor !== 'number' || !(resolved.backoff.factor >= 1)) {
    throw new LunationError(
      'invalid-argument',
      `backoff.factor must be a number >= 1, got ${backoff.factor}`,
    );
  }
  assertInteger(resolved.backoff.maxMs, 'backoff.maxMs', resolved.backoff.initialMs);
  if (policy.maxDepth !== undefined) assertInteger(policy.maxDepth, 'maxDepth', 1);
  if (policy.maxActivePerResource !== undefined) {
    assertInteger(policy.maxActivePerResource, 'maxActivePerResource', 1);
  }
  assertInteger(resolved.maxEventsPerRun, 'maxEventsPerRun', 1);
  assertInteger(resolved.dedupeWindowMs, 'dedupeWindowMs', 0);
  return resolved;
}

/** The delay before the attempt after failed attempt `attempt` (1-based): exponential, capped, no jitter. */
export function dispatchRetryDelay(backoff: Required<DispatchBackoff>, attempt: number): number {
  return Math.min(backoff.maxMs, Math.round(backoff.initialMs * backoff.factor ** (attempt - 1)));
}

/**
 * The checks every dispatcher makes on `submit` (ids, the request's type and lists); `invalid-argument` names
 * the field. Message and decision shapes are the runtime's to build, so they are not re-validated here.
 */
export function assertSubmission(submission: Submission): void {
  assertObject(submission, 'submission');
  assertId(submission.id, 'id');
  assertId(submission.threadId, 'threadId');
  if (submission.resourceId !== undefined) assertId(submission.resourceId, 'resourceId');
  const request = submission.request as unknown;
  assertObject(request, 'request');
  if (request.type === 'input') {
    assertList(request.input, 'request.input');
    if (request.agentId !== undefined) assertId(request.agentId, 'request.agentId');
    if (request.runId !== undefined) assertId(request.runId, 'request.runId');
    if (request.frontendTools !== undefined && !Array.isArray(request.frontendTools)) {
      throw new LunationError('invalid-argument', 'request.frontendTools must be an array');
    }
  } else if (request.type === 'decisions') {
    assertList(request.decisions, 'request.decisions');
  } else if (request.type === 'continue') {
    assertId(request.runId, 'request.runId');
  } else {
    throw new LunationError(
      'invalid-argument',
      `request.type must be "input", "decisions" or "continue", got ${JSON.stringify(request.type) ?? 'undefined'}`,
    );
  }
}

function assertList(value: unknown, name: string): void {
  if (!Array.isArray(value) || value.length === 0) {
    throw new LunationError('invalid-argument', `${name} must be a non-empty array`);
  }
  for (let index = 0; index < value.length; index++) assertObject(value[index], `${name}[${index}]`);
}

/** The number an event id (or `after`) stands for; `invalid-argument` unless it is a decimal integer >= 0. */
export function parseRunEventId(value: unknown, name: string): number {
  if (typeof value !== 'string' || !/^(0|[1-9][0-9]*)$/.test(value) || !Number.isSafeInteger(Number(value))) {
    throw new LunationError(
      'invalid-argument',
      `${name} must be an event id (a decimal integer such as "42", or "0" for the start), got ${JSON.stringify(value) ?? String(value)}`,
    );
  }
  return Number(value);
}

/** The `claim-lost` error for a claim that expired or was already released. */
export function claimLostError(claim: DispatchClaim, cause?: unknown): LunationError {
  return new LunationError(
    'claim-lost',
    `The claim of thread "${claim.threadId}" by worker "${claim.workerId}" is no longer held (its lock expired, or it was already completed, failed or handed back); stop working on the thread and claim again`,
    { details: { threadId: claim.threadId, workerId: claim.workerId }, cause },
  );
}

/** The `overloaded` error `submit` raises at the depth cap (retryable). */
export function overloadedError(depth: number, maxDepth: number): LunationError {
  return new LunationError(
    'overloaded',
    `The dispatcher is at its depth cap (${depth} threads waiting, maxDepth ${maxDepth}); retry later or add workers`,
    { retryable: true, details: { depth, maxDepth } },
  );
}
