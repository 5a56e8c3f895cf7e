import {
  LunationError,
  type LunationStore,
  supportsToolEffects,
  type TransactionalToolEffects,
} from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { expectLunationError, makeBeginToolExecutionInput, makeToolResult, uniqueId } from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { createThread } from './spec-helpers.js';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * `TransactionalToolEffects`, for stores that declare it: an effect's result becomes the entry's completion in
 * the same call; a completed entry never runs an effect again; a failed effect, a stale lease or an aborted signal
 * writes nothing. A store that does not declare it must not have the method.
 */
export function toolEffectsSpec(context: StoreSpecContext, declared: boolean): void {
  describe('transactional tool effects', () => {
    if (!declared) {
      it('the store does not claim TransactionalToolEffects', () => {
        expect(supportsToolEffects(context.store)).toBe(false);
      });
      return;
    }

    function effects(): LunationStore & TransactionalToolEffects {
      const { store } = context;
      if (!supportsToolEffects(store)) throw new Error('the store was declared transactional but is not');
      return store;
    }

    async function begun() {
      const thread = await createThread(context.store);
      const input = makeBeginToolExecutionInput({ threadId: thread.id, runId: uniqueId('run') });
      await context.store.beginToolExecution(input);
      return input;
    }

    it("records the effect's result as the completion, and never runs an effect for a completed entry", async () => {
      const input = await begun();
      const store = effects();
      const ran: unknown[] = [];
      const entry = await store.completeToolExecutionWithEffect(
        { runId: input.runId, toolCallId: input.toolCallId },
        async (transaction) => {
          ran.push(transaction);
          return makeToolResult(1);
        },
      );
      expect(ran).toHaveLength(1);
      expect(ran[0]).toBeDefined();
      expect(entry).toMatchObject({ status: 'completed', result: makeToolResult(1), attempts: 1 });
      expect(await store.getToolExecution(input.runId, input.toolCallId)).toEqual(entry);
      const again = await store.completeToolExecutionWithEffect(
        { runId: input.runId, toolCallId: input.toolCallId },
        async () => {
          ran.push('again');
          return makeToolResult(2);
        },
      );
      expect(ran).toHaveLength(1);
      expect(again).toEqual(entry);
    });

    it('an effect that throws writes nothing and its error comes back as thrown', async () => {
      const input = await begun();
      const store = effects();
      const thrown = new Error('the effect failed');
      await expect(
        store.completeToolExecutionWithEffect(
          { runId: input.runId, toolCallId: input.toolCallId },
          async () => {
            throw thrown;
          },
        ),
      ).rejects.toBe(thrown);
      expect(await store.getToolExecution(input.runId, input.toolCallId)).toMatchObject({
        status: 'in-flight',
      });
    });

    it('an entry never begun is not-found and its effect does not run', async () => {
      const store = effects();
      let ran = false;
      await expectLunationError(
        store.completeToolExecutionWithEffect({ runId: uniqueId('run'), toolCallId: 'never' }, async () => {
          ran = true;
          return makeToolResult();
        }),
        'not-found',
      );
      expect(ran).toBe(false);
    });

    it('a signal aborted while the effect runs: rejects at once with its reason, writes nothing, and the effect ending later commits nothing', async () => {
      const input = await begun();
      const store = effects();
      const controller = new AbortController();
      const reason = new LunationError('cancelled', 'the caller gave up on this call');
      let started!: () => void;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      let finish!: () => void;
      const finishing = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const call = store.completeToolExecutionWithEffect(
        { runId: input.runId, toolCallId: input.toolCallId, signal: controller.signal },
        async () => {
          started();
          await finishing;
          return makeToolResult(1);
        },
      );
      const settled = call.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      try {
        await running;
        controller.abort(reason);
        const outcome = await Promise.race([
          settled,
          sleep(2_000).then(() => 'still waiting for the effect'),
        ]);
        expect(outcome).toBe(reason);
        expect(await store.getToolExecution(input.runId, input.toolCallId)).toMatchObject({
          status: 'in-flight',
        });
        // The store is not held by the abandoned effect: the caller records its own completion.
        await store.completeToolExecution({
          runId: input.runId,
          toolCallId: input.toolCallId,
          result: makeToolResult(2),
        });
      } finally {
        finish();
      }
      await settled;
      await sleep(50);
      expect(await store.getToolExecution(input.runId, input.toolCallId)).toMatchObject({
        status: 'completed',
        result: makeToolResult(2),
      });
    });

    it('a signal already aborted: the effect never runs, the call rejects with its reason, nothing is written', async () => {
      const input = await begun();
      const store = effects();
      const reason = new LunationError('cancelled', 'the caller gave up on this call');
      let ran = false;
      await expect(
        store.completeToolExecutionWithEffect(
          { runId: input.runId, toolCallId: input.toolCallId, signal: AbortSignal.abort(reason) },
          async () => {
            ran = true;
            return makeToolResult(1);
          },
        ),
      ).rejects.toBe(reason);
      expect(ran).toBe(false);
      expect(await store.getToolExecution(input.runId, input.toolCallId)).toMatchObject({
        status: 'in-flight',
      });
    });

    it('a stale lease token is stale-lease and leaves the entry in flight', async () => {
      const input = await begun();
      const store = effects();
      const { threadId } = input;
      const old = await store.acquireLease({ threadId, owner: 'a', runId: input.runId, ttlMs: 60_000 });
      await store.releaseLease({ threadId, token: old.token });
      await store.acquireLease({ threadId, owner: 'b', runId: input.runId, ttlMs: 60_000 });
      await expectLunationError(
        store.completeToolExecutionWithEffect(
          { runId: input.runId, toolCallId: input.toolCallId, leaseToken: old.token },
          async () => makeToolResult(),
        ),
        'stale-lease',
      );
      expect(await store.getToolExecution(input.runId, input.toolCallId)).toMatchObject({
        status: 'in-flight',
      });
    });
  });
}
