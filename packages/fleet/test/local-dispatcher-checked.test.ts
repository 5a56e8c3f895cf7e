import type { DispatchClaim, Dispatcher } from '@lunation/contract';
import { CheckedDispatcher } from '@lunation/contract/dispatch-utils';
import { describe, expect, it } from 'vitest';
import { LocalDispatchBackend, LocalDispatcher } from '../src/index.js';

const claim: DispatchClaim = { threadId: 't1', workerId: 'w1', attempt: 1, token: 'token', claimedAt: 0 };

/** One call of every dispatcher operation, with valid arguments. */
const calls: Record<string, (dispatcher: Dispatcher) => Promise<unknown>> = {
  submit: (d) => d.submit({ id: 's1', threadId: 't1', request: { type: 'continue', runId: 'r1' } }),
  claim: (d) => d.claim({ workerId: 'w1' }),
  extend: (d) => d.extend(claim),
  pending: (d) => d.pending('t1'),
  acknowledge: (d) => d.acknowledge('t1', ['s1']),
  complete: (d) => d.complete(claim),
  fail: (d) => d.fail(claim, new Error('x')),
  handBack: (d) => d.handBack(claim),
  depth: (d) => d.depth(),
  deadLetters: (d) => d.deadLetters(),
  resubmit: (d) => d.resubmit('t1'),
  requestCancel: (d) => d.requestCancel({ threadId: 't1', reason: 'stop' }),
  cancelRequests: (d) => d.cancelRequests('t1'),
  watchCancel: (d) => d.watchCancel('t1', () => {}),
  clearCancel: (d) => d.clearCancel('t1'),
  appendEvents: (d) => d.appendEvents('r1', []),
  readEvents: (d) => d.readEvents('r1'),
  subscribeEvents: async (d) => d.subscribeEvents('r1', { signal: new AbortController().signal }),
  endEvents: (d) => d.endEvents('r1', { ttlMs: 0 }),
};

describe('LocalDispatcher on the checked layer', () => {
  it('is a CheckedDispatcher of kind local, with the contract version', () => {
    const dispatcher = new LocalDispatcher();
    expect(dispatcher).toBeInstanceOf(CheckedDispatcher);
    expect(dispatcher.kind).toBe('local');
    expect(dispatcher.specificationVersion).toBe('v3');
  });

  it.each(Object.keys(calls))(
    'refuses %s once closed, with store-unavailable (not retryable)',
    async (name) => {
      const backend = new LocalDispatchBackend();
      const dispatcher = new LocalDispatcher({ backend });
      await dispatcher.close();
      await expect((calls[name] as (d: Dispatcher) => Promise<unknown>)(dispatcher)).rejects.toMatchObject({
        code: 'store-unavailable',
        isRetryable: false,
      });
      // A sibling on the same state goes on.
      await expect(new LocalDispatcher({ backend }).depth()).resolves.toMatchObject({ pending: 0 });
    },
  );

  it('checks a claim handed back to it as the other dispatchers do', async () => {
    const dispatcher = new LocalDispatcher();
    const forged = { ...claim, token: '' };
    await expect(dispatcher.complete(forged)).rejects.toMatchObject({ code: 'invalid-argument' });
    await expect(dispatcher.extend(claim, 0)).rejects.toMatchObject({ code: 'invalid-argument' });
    await expect(dispatcher.fail(claim, new Error('x'), { retryable: 'yes' as never })).rejects.toMatchObject(
      {
        code: 'invalid-argument',
      },
    );
  });
});
