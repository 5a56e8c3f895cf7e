import { leaseSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { expectLunationError, makeUserMessage, sleep, uniqueId } from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { createThread, expectSchema, expectTimestampBetween } from './spec-helpers.js';

/** Thread leases and fencing tokens, including expiry with short TTLs. */
export function leasesSpec(context: StoreSpecContext): void {
  describe('leases and fencing', () => {
    it('acquireLease returns the lease with a positive token, renewedAt = now and expiresAt = now + ttl', async () => {
      const thread = await createThread(context.store);
      const before = Date.now();
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'worker-1',
        runId: 'run-1',
        ttlMs: 30_000,
      });
      const after = Date.now();
      expectSchema(leaseSchema, lease);
      expect(lease).toEqual({
        threadId: thread.id,
        owner: 'worker-1',
        runId: 'run-1',
        token: expect.any(Number),
        renewedAt: expect.any(Number),
        expiresAt: expect.any(Number),
      });
      expect(lease.token).toBeGreaterThan(0);
      expectTimestampBetween(lease.renewedAt, before, after);
      expect(lease.expiresAt).toBe(lease.renewedAt + 30_000);
      expect(await context.store.getLease(thread.id)).toEqual(lease);
    });

    it('acquireLease fails with thread-busy naming the active run while a lease is held, even for the same owner', async () => {
      const threadId = uniqueId('thread');
      const held = await context.store.acquireLease({
        threadId,
        owner: 'worker-1',
        runId: 'run-9',
        ttlMs: 30_000,
      });
      for (const owner of ['worker-2', 'worker-1']) {
        const error = await expectLunationError(
          context.store.acquireLease({ threadId, owner, runId: 'run-10', ttlMs: 30_000 }),
          'thread-busy',
        );
        expect(error.details).toEqual(expect.objectContaining({ runId: 'run-9', owner: 'worker-1' }));
        expect(error.message).toContain(threadId);
        expect(error.message).toContain('run-9');
      }
      expect(await context.store.getLease(threadId)).toEqual(held);
    });

    it('a thread need not exist to be leased, and leases of different threads are independent', async () => {
      const first = uniqueId('thread');
      const second = uniqueId('thread');
      const a = await context.store.acquireLease({ threadId: first, owner: 'w', runId: 'r1', ttlMs: 30_000 });
      const b = await context.store.acquireLease({
        threadId: second,
        owner: 'w',
        runId: 'r2',
        ttlMs: 30_000,
      });
      expect(await context.store.getThread(first)).toBeUndefined();
      expect(await context.store.getLease(first)).toEqual(a);
      expect(await context.store.getLease(second)).toEqual(b);
      expect(await context.store.releaseLease({ threadId: first, token: a.token })).toBe(true);
      expect(await context.store.getLease(second)).toEqual(b);
    });

    it('tokens strictly increase across acquisitions, and release never lowers them', async () => {
      const threadId = uniqueId('thread');
      const tokens: number[] = [];
      for (let index = 0; index < 4; index += 1) {
        const lease = await context.store.acquireLease({
          threadId,
          owner: `w${index}`,
          runId: `r${index}`,
          ttlMs: 30_000,
        });
        tokens.push(lease.token);
        expect(await context.store.releaseLease({ threadId, token: lease.token })).toBe(true);
      }
      for (let index = 1; index < tokens.length; index += 1)
        expect(tokens[index]).toBeGreaterThan(tokens[index - 1]!);
    });

    it('releaseLease returns true once for the holder and false otherwise', async () => {
      const threadId = uniqueId('thread');
      expect(await context.store.releaseLease({ threadId, token: 1 })).toBe(false);
      const earlier = await context.store.acquireLease({ threadId, owner: 'w0', runId: 'r0', ttlMs: 30_000 });
      expect(await context.store.releaseLease({ threadId, token: earlier.token })).toBe(true);
      const lease = await context.store.acquireLease({ threadId, owner: 'w', runId: 'r', ttlMs: 30_000 });
      expect(await context.store.releaseLease({ threadId, token: lease.token + 1 })).toBe(false);
      expect(await context.store.releaseLease({ threadId, token: earlier.token })).toBe(false);
      expect(await context.store.getLease(threadId)).toEqual(lease);
      expect(await context.store.releaseLease({ threadId, token: lease.token })).toBe(true);
      expect(await context.store.getLease(threadId)).toBeUndefined();
      expect(await context.store.releaseLease({ threadId, token: lease.token })).toBe(false);
      const next = await context.store.acquireLease({ threadId, owner: 'w2', runId: 'r2', ttlMs: 30_000 });
      expect(next.token).toBeGreaterThan(lease.token);
    });

    it('renewLease extends the current lease and keeps its token, owner and run', async () => {
      const threadId = uniqueId('thread');
      const lease = await context.store.acquireLease({ threadId, owner: 'w', runId: 'r', ttlMs: 1_000 });
      const before = Date.now();
      const renewed = await context.store.renewLease({ threadId, token: lease.token, ttlMs: 60_000 });
      const after = Date.now();
      expect(renewed).toEqual({ ...lease, renewedAt: expect.any(Number), expiresAt: expect.any(Number) });
      expectTimestampBetween(renewed.renewedAt, before, after);
      expect(renewed.expiresAt).toBe(renewed.renewedAt + 60_000);
      expect(renewed.expiresAt).toBeGreaterThan(lease.expiresAt);
      expect(await context.store.getLease(threadId)).toEqual(renewed);
    });

    it('renewLease fails with lease-lost for a token that is not current or a lease never taken', async () => {
      const threadId = uniqueId('thread');
      await expectLunationError(context.store.renewLease({ threadId, token: 1, ttlMs: 1_000 }), 'lease-lost');
      const old = await context.store.acquireLease({ threadId, owner: 'a', runId: 'r1', ttlMs: 30_000 });
      await context.store.releaseLease({ threadId, token: old.token });
      const current = await context.store.acquireLease({ threadId, owner: 'b', runId: 'r2', ttlMs: 30_000 });
      await expectLunationError(
        context.store.renewLease({ threadId, token: old.token, ttlMs: 1_000 }),
        'lease-lost',
      );
      await expectLunationError(
        context.store.renewLease({ threadId, token: current.token + 1, ttlMs: 1_000 }),
        'lease-lost',
      );
      expect(await context.store.getLease(threadId)).toEqual(current);
    });

    it('renewLease fails with lease-lost after the lease was released', async () => {
      const threadId = uniqueId('thread');
      const lease = await context.store.acquireLease({ threadId, owner: 'a', runId: 'r1', ttlMs: 30_000 });
      expect(await context.store.releaseLease({ threadId, token: lease.token })).toBe(true);
      await expectLunationError(
        context.store.renewLease({ threadId, token: lease.token, ttlMs: 1_000 }),
        'lease-lost',
      );
      expect(await context.store.getLease(threadId)).toBeUndefined();
    });

    it('an expired lease disappears and can be renewed by its holder while nobody else took it', async () => {
      const threadId = uniqueId('thread');
      const lease = await context.store.acquireLease({ threadId, owner: 'a', runId: 'r1', ttlMs: 50 });
      await sleep(90);
      expect(await context.store.getLease(threadId)).toBeUndefined();
      const renewed = await context.store.renewLease({ threadId, token: lease.token, ttlMs: 30_000 });
      expect(renewed.token).toBe(lease.token);
      expect(renewed.owner).toBe('a');
      expect(renewed.runId).toBe('r1');
      expect(await context.store.getLease(threadId)).toEqual(renewed);
      await expectLunationError(
        context.store.acquireLease({ threadId, owner: 'b', runId: 'r2', ttlMs: 30_000 }),
        'thread-busy',
      );
    });

    it('after expiry another owner acquires a higher token, and the old holder is fenced off', async () => {
      const thread = await createThread(context.store);
      const threadId = thread.id;
      const old = await context.store.acquireLease({ threadId, owner: 'a', runId: 'r1', ttlMs: 50 });
      await sleep(90);
      const taken = await context.store.acquireLease({ threadId, owner: 'b', runId: 'r2', ttlMs: 30_000 });
      expect(taken.token).toBeGreaterThan(old.token);
      expect(await context.store.getLease(threadId)).toEqual(taken);

      await expectLunationError(
        context.store.renewLease({ threadId, token: old.token, ttlMs: 30_000 }),
        'lease-lost',
      );
      expect(await context.store.releaseLease({ threadId, token: old.token })).toBe(false);
      await expectLunationError(
        context.store.commit({
          threadId,
          expectedMessageCount: 0,
          messages: [makeUserMessage('zombie')],
          leaseToken: old.token,
        }),
        'stale-lease',
      );
      expect(await context.store.listMessages(threadId)).toEqual([]);
      expect(await context.store.getLease(threadId)).toEqual(taken);
      expect(
        await context.store.commit({
          threadId,
          expectedMessageCount: 0,
          messages: [makeUserMessage('rightful')],
          leaseToken: taken.token,
        }),
      ).toEqual({ messageCount: 1 });
    });

    it('keeps the incarnation in the lease, its renewals and thread-busy details', async () => {
      const threadId = uniqueId('thread');
      const lease = await context.store.acquireLease({
        threadId,
        owner: 'server',
        incarnation: 'life-1',
        runId: 'r1',
        ttlMs: 30_000,
      });
      expectSchema(leaseSchema, lease);
      expect(lease.incarnation).toBe('life-1');
      expect(await context.store.getLease(threadId)).toEqual(lease);
      const renewed = await context.store.renewLease({ threadId, token: lease.token, ttlMs: 30_000 });
      expect(renewed).toEqual({ ...lease, renewedAt: expect.any(Number), expiresAt: expect.any(Number) });
      const error = await expectLunationError(
        context.store.acquireLease({
          threadId,
          owner: 'other',
          incarnation: 'x',
          runId: 'r2',
          ttlMs: 30_000,
        }),
        'thread-busy',
      );
      expect(error.details).toEqual(
        expect.objectContaining({
          threadId,
          runId: 'r1',
          owner: 'server',
          incarnation: 'life-1',
          renewedAt: renewed.renewedAt,
          expiresAt: renewed.expiresAt,
        }),
      );
    });

    it('two live incarnations of one owner never hold a thread at once while the holder renews', async () => {
      const threadId = uniqueId('thread');
      const held = await context.store.acquireLease({
        threadId,
        owner: 'replica',
        incarnation: 'live-a',
        runId: 'r1',
        ttlMs: 400,
      });
      // 1.5 s: long enough that a store that extends `expiresAt` but does not move `renewedAt` lets the twin in
      // (three quarters of a time to live that grows with each renewal: after 1.2 s here).
      for (let attempt = 0; attempt < 15; attempt += 1) {
        await sleep(100);
        // The holder renews every 100 ms; its replica would take over only after 300 ms without a renewal.
        await context.store.renewLease({ threadId, token: held.token, ttlMs: 400 });
        const error = await expectLunationError(
          context.store.acquireLease({
            threadId,
            owner: 'replica',
            incarnation: 'live-b',
            runId: 'r2',
            ttlMs: 400,
          }),
          'thread-busy',
        );
        expect(error.details).toEqual(expect.objectContaining({ runId: 'r1', incarnation: 'live-a' }));
      }
      expect((await context.store.getLease(threadId))?.token).toBe(held.token);
    });

    it('takes over a lease of the same owner once it went unrenewed for three quarters of its ttl (not half), fencing the old holder', async () => {
      const thread = await createThread(context.store);
      const threadId = thread.id;
      const old = await context.store.acquireLease({
        threadId,
        owner: 'server',
        incarnation: 'dead',
        runId: 'r1',
        ttlMs: 3_000,
      });
      // Past half the ttl (specification v1 took over here): the holder may still count its lease fresh (it does
      // for three quarters of the ttl from when it sent its last renewal), so a same-owner twin must wait.
      await sleep(1_560);
      await expectLunationError(
        context.store.acquireLease({
          threadId,
          owner: 'server',
          incarnation: 'restarted',
          runId: 'r2',
          ttlMs: 30_000,
        }),
        'thread-busy',
      );
      await sleep(2_300 - 1_560);
      const taken = await context.store.acquireLease({
        threadId,
        owner: 'server',
        incarnation: 'restarted',
        runId: 'r2',
        ttlMs: 30_000,
      });
      expect(taken).toEqual(
        expect.objectContaining({ owner: 'server', incarnation: 'restarted', runId: 'r2' }),
      );
      expect(taken.token).toBeGreaterThan(old.token);
      expect(await context.store.getLease(threadId)).toEqual(taken);
      await expectLunationError(
        context.store.renewLease({ threadId, token: old.token, ttlMs: 30_000 }),
        'lease-lost',
      );
      expect(await context.store.releaseLease({ threadId, token: old.token })).toBe(false);
      await expectLunationError(
        context.store.commit({
          threadId,
          expectedMessageCount: 0,
          messages: [makeUserMessage('zombie')],
          leaseToken: old.token,
        }),
        'stale-lease',
      );
      expect(await context.store.listMessages(threadId)).toEqual([]);
      expect(await context.store.getLease(threadId)).toEqual(taken);
    });

    it('an unrenewed lease is waited out when the owner differs or either incarnation is missing', async () => {
      const threadId = uniqueId('thread');
      const held = await context.store.acquireLease({
        threadId,
        owner: 'server',
        incarnation: 'dead',
        runId: 'r1',
        ttlMs: 2_000,
      });
      const bare = uniqueId('thread');
      await context.store.acquireLease({ threadId: bare, owner: 'server', runId: 'r1', ttlMs: 2_000 });
      await sleep(1_100);
      const attempts = [
        { threadId, owner: 'other', incarnation: 'x' },
        { threadId, owner: 'server' },
        { threadId: bare, owner: 'server', incarnation: 'restarted' },
      ];
      for (const attempt of attempts) {
        await expectLunationError(
          context.store.acquireLease({ ...attempt, runId: 'r2', ttlMs: 30_000 }),
          'thread-busy',
        );
      }
      expect(await context.store.getLease(threadId)).toEqual(held);
    });

    it('the incarnation that holds a lease acquires it again at once, with a new token', async () => {
      const threadId = uniqueId('thread');
      const first = await context.store.acquireLease({
        threadId,
        owner: 'server',
        incarnation: 'me',
        runId: 'r1',
        ttlMs: 30_000,
      });
      const again = await context.store.acquireLease({
        threadId,
        owner: 'server',
        incarnation: 'me',
        runId: 'r2',
        ttlMs: 30_000,
      });
      expect(again).toEqual(expect.objectContaining({ runId: 'r2', incarnation: 'me' }));
      expect(again.token).toBeGreaterThan(first.token);
      await expectLunationError(
        context.store.renewLease({ threadId, token: first.token, ttlMs: 30_000 }),
        'lease-lost',
      );
      // Another owner with the same incarnation id takes nothing over.
      await expectLunationError(
        context.store.acquireLease({
          threadId,
          owner: 'client',
          incarnation: 'me',
          runId: 'r3',
          ttlMs: 30_000,
        }),
        'thread-busy',
      );
    });

    it('rejects a malformed incarnation with invalid-argument', async () => {
      const threadId = uniqueId('thread');
      await expectLunationError(
        context.store.acquireLease({ threadId, owner: 'a', incarnation: '', runId: 'r', ttlMs: 1_000 }),
        'invalid-argument',
      );
      expect(await context.store.getLease(threadId)).toBeUndefined();
    });

    it('deleteThread removes the lease but later tokens are still higher than any issued before', async () => {
      const thread = await createThread(context.store);
      const lease = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'a',
        runId: 'r1',
        ttlMs: 30_000,
      });
      expect(await context.store.deleteThread(thread.id)).toBe(true);
      expect(await context.store.getLease(thread.id)).toBeUndefined();
      const next = await context.store.acquireLease({
        threadId: thread.id,
        owner: 'b',
        runId: 'r2',
        ttlMs: 30_000,
      });
      expect(next.token).toBeGreaterThan(lease.token);
    });
  });
}
