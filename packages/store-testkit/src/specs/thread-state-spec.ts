import { describe, expect, it } from 'vitest';
import { uniqueId } from '../fixtures.js';
import type { StoreSpecContext } from '../store-spec-context.js';
import { appendMessages, createThread } from './spec-helpers.js';

/** getThreadState and the wholesale replacement of thread state by commit. */
export function threadStateSpec(context: StoreSpecContext): void {
  describe('thread state', () => {
    it('getThreadState returns {} for a thread without state', async () => {
      const thread = await createThread(context.store);
      expect(await context.store.getThreadState(thread.id)).toEqual({});
      await appendMessages(context.store, thread.id, 2);
      expect(await context.store.getThreadState(thread.id)).toEqual({});
    });

    it('a commit replaces the thread state whole; a commit without threadState leaves it alone', async () => {
      const thread = await createThread(context.store);
      await appendMessages(context.store, thread.id, 1, { threadState: { todo: ['a', 'b'], mode: 'plan' } });
      expect(await context.store.getThreadState(thread.id)).toEqual({ todo: ['a', 'b'], mode: 'plan' });
      await appendMessages(context.store, thread.id, 1);
      expect(await context.store.getThreadState(thread.id)).toEqual({ todo: ['a', 'b'], mode: 'plan' });
      await appendMessages(context.store, thread.id, 0, { threadState: { mode: 'act' } });
      expect(await context.store.getThreadState(thread.id)).toEqual({ mode: 'act' });
      await appendMessages(context.store, thread.id, 0, { threadState: {} });
      expect(await context.store.getThreadState(thread.id)).toEqual({});
    });

    it('round-trips nested JSON values exactly', async () => {
      const thread = await createThread(context.store);
      const state = {
        nothing: null,
        yes: true,
        no: false,
        zero: 0,
        negative: -17,
        fraction: 0.1,
        big: Number.MAX_SAFE_INTEGER,
        tiny: 5e-324,
        huge: 1.7976931348623157e308,
        empty: '',
        list: [1, [2, [3, []]], { deep: { deeper: { deepest: 'yes' } } }],
        object: {},
        'key with spaces and "quotes"': 'value\\with\\backslashes',
      };
      await appendMessages(context.store, thread.id, 0, { threadState: state });
      expect(await context.store.getThreadState(thread.id)).toEqual(state);
    });

    it('keeps the state of each thread apart', async () => {
      const left = await createThread(context.store);
      const right = await createThread(context.store);
      await appendMessages(context.store, left.id, 0, { threadState: { side: 'left' } });
      await appendMessages(context.store, right.id, 0, { threadState: { side: 'right' } });
      expect(await context.store.getThreadState(left.id)).toEqual({ side: 'left' });
      expect(await context.store.getThreadState(right.id)).toEqual({ side: 'right' });
      expect(await context.store.getThreadState(uniqueId('missing'))).toEqual({});
    });
  });
}
