import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { errorResult, IllegalCallMoveError, moveTo, newPlan, settle } from '../../src/loop/call-plan.js';

const call = { toolCallId: 'c1', callId: 'lc_1', toolName: 'send', arguments: '{}' };

describe("a call's phase", () => {
  it('moves along the protocol: new → allowed → running → succeeded', () => {
    const plan = newPlan(call, 'r1');
    moveTo(plan, 'allowed');
    moveTo(plan, 'running');
    settle(plan, 'succeeded', { status: 'success', data: 'sent' });
    expect(plan).toMatchObject({ status: 'succeeded', dirty: true });
  });

  it('refuses a move the protocol does not have with a typed internal error, leaving the phase as it was', () => {
    const plan = newPlan(call, 'r1');
    expect(() => moveTo(plan, 'running')).toThrow(IllegalCallMoveError);
    settle(plan, 'denied', errorResult('no'));
    let thrown: unknown;
    try {
      moveTo(plan, 'running');
    } catch (error) {
      thrown = error;
    }
    expect(LunationError.hasCode(thrown, 'internal')).toBe(true);
    expect((thrown as LunationError).details).toEqual({ toolCallId: 'c1', from: 'denied', to: 'running' });
    expect(plan.status).toBe('denied');
    expect(() => settle(plan, 'succeeded', { status: 'success', data: 1 })).toThrow(IllegalCallMoveError);
  });
});
