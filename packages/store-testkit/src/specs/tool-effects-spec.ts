import { type LunationStore, supportsToolEffects, type TransactionalToolEffects } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { expectLunationError, makeBeginToolExecutionInput, makeToolResult, uniqueId } from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { createThread } from './spec-helpers.js';

/**
 * `TransactionalToolEffects`, for stores that declare it: an effect's result becomes the entry's completion in
 * the same call; a completed entry never runs an effect again; a failed effect or a stale lease writes
 * nothing. A store that does not declare it must not have the method.
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
