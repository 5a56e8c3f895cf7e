import { describe, expect, it } from 'vitest';
import {
  assertSubmission,
  claimLostError,
  dispatchPolicyDefaults,
  dispatchRetryDelay,
  overloadedError,
  parseRunEventId,
  resolveDispatchPolicy,
} from './dispatch-utils/index.js';
import { LunationError } from './errors.js';
import {
  cancelRequestSchema,
  dispatchClaimSchema,
  dispatchRequestSchema,
  runEventIdSchema,
  submissionSchema,
} from './index.js';

const message = { id: 'm1', role: 'user' as const, content: [{ type: 'text' as const, text: 'Hi' }] };

describe('dispatch schemas', () => {
  it('accept submissions of input and decisions, and reject empty lists and unknown types', () => {
    const input = { id: 's1', threadId: 't1', request: { type: 'input', input: [message], runId: 'r1' } };
    expect(submissionSchema.parse(input)).toEqual(input);
    const decisions = {
      id: 's2',
      threadId: 't1',
      resourceId: 'u1',
      request: { type: 'decisions', decisions: [{ decisionId: 'd1', ticketId: 'k1', action: 'resume' }] },
    };
    expect(submissionSchema.parse(decisions)).toEqual(decisions);
    expect(dispatchRequestSchema.safeParse({ type: 'input', input: [] }).success).toBe(false);
    expect(dispatchRequestSchema.safeParse({ type: 'decisions', decisions: [] }).success).toBe(false);
    expect(dispatchRequestSchema.safeParse({ type: 'cancel' }).success).toBe(false);
  });

  it('describe claims, cancel requests and event ids', () => {
    const claim = { threadId: 't1', workerId: 'w1', attempt: 1, token: 'x', claimedAt: 5 };
    expect(dispatchClaimSchema.parse(claim)).toEqual(claim);
    expect(dispatchClaimSchema.safeParse({ ...claim, attempt: 0 }).success).toBe(false);
    expect(
      cancelRequestSchema.safeParse({ id: 'c1', threadId: 't1', reason: '', requestedAt: 1 }).success,
    ).toBe(true);
    expect(['0', '1', '42'].map((id) => runEventIdSchema.safeParse(id).success)).toEqual([true, true, true]);
    expect(['', '01', '-1', '1.5', 'x'].map((id) => runEventIdSchema.safeParse(id).success)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('dispatch helpers', () => {
  it('resolveDispatchPolicy applies the defaults and names the first bad field', () => {
    expect(resolveDispatchPolicy({}, { dedupeWindowMs: 7 })).toEqual({
      maxAttempts: dispatchPolicyDefaults.maxAttempts,
      backoff: { ...dispatchPolicyDefaults.backoff },
      maxDepth: Number.POSITIVE_INFINITY,
      maxActivePerResource: Number.POSITIVE_INFINITY,
      maxEventsPerRun: 10_000,
      dedupeWindowMs: 7,
    });
    const bad: [object, RegExp][] = [
      [{ maxAttempts: 0 }, /maxAttempts/],
      [{ backoff: { factor: 0.5 } }, /backoff.factor/],
      [{ backoff: { initialMs: 500, maxMs: 100 } }, /backoff.maxMs/],
      [{ maxDepth: 0 }, /maxDepth/],
      [{ maxActivePerResource: 1.5 }, /maxActivePerResource/],
      [{ maxEventsPerRun: 0 }, /maxEventsPerRun/],
      [{ dedupeWindowMs: -1 }, /dedupeWindowMs/],
    ];
    for (const [policy, field] of bad) {
      expect(() => resolveDispatchPolicy(policy, { dedupeWindowMs: 0 })).toThrow(field);
    }
  });

  it('dispatchRetryDelay grows by the factor from initialMs and stops at maxMs', () => {
    const backoff = { initialMs: 100, factor: 3, maxMs: 2_000 };
    expect([1, 2, 3, 4, 5].map((attempt) => dispatchRetryDelay(backoff, attempt))).toEqual([
      100, 300, 900, 2_000, 2_000,
    ]);
  });

  it('assertSubmission names the bad field with invalid-argument', () => {
    const valid = { id: 's1', threadId: 't1', request: { type: 'input' as const, input: [message] } };
    expect(() => assertSubmission(valid)).not.toThrow();
    const cases: [unknown, RegExp][] = [
      [{ ...valid, id: '' }, /^id must be/],
      [{ ...valid, threadId: 5 }, /^threadId must be/],
      [{ ...valid, request: { type: 'input', input: [] } }, /request.input must be a non-empty array/],
      [{ ...valid, request: { type: 'input', input: [null] } }, /request.input\[0\]/],
      [{ ...valid, request: { type: 'input', input: [message], runId: '' } }, /request.runId/],
      [{ ...valid, request: { type: 'decisions' } }, /request.decisions/],
      [
        { ...valid, request: { type: 'shout' } },
        /request.type must be "input", "decisions" or "continue", got "shout"/,
      ],
    ];
    for (const [submission, text] of cases) {
      let caught: unknown;
      try {
        assertSubmission(submission as never);
      } catch (error) {
        caught = error;
      }
      expect(LunationError.hasCode(caught, 'invalid-argument')).toBe(true);
      expect((caught as Error).message).toMatch(text);
    }
  });

  it('parseRunEventId reads decimal ids and rejects anything else', () => {
    expect(parseRunEventId('0', 'after')).toBe(0);
    expect(parseRunEventId('123', 'after')).toBe(123);
    for (const value of ['', '01', '-1', '1e3', 12, '99999999999999999999']) {
      expect(() => parseRunEventId(value, 'after')).toThrow(/after must be an event id/);
    }
  });

  it('claimLostError and overloadedError carry their codes, retryability and details', () => {
    const lost = claimLostError({ threadId: 't1', workerId: 'w1', attempt: 1, token: 'x', claimedAt: 1 });
    expect([lost.code, lost.isRetryable, lost.details]).toEqual([
      'claim-lost',
      false,
      { threadId: 't1', workerId: 'w1' },
    ]);
    expect(lost.message).toContain('"t1"');
    const overloaded = overloadedError(10, 10);
    expect([overloaded.code, overloaded.isRetryable, overloaded.details]).toEqual([
      'overloaded',
      true,
      { depth: 10, maxDepth: 10 },
    ]);
  });
});
