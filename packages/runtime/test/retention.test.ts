import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { createRuntime } from '../src/index.js';
import { reply, ScriptedModel } from '../src/testing/index.js';

function counter() {
  let turn = 0;
  return new ScriptedModel(() => reply(`answer ${++turn}`));
}

describe('threads without a store', () => {
  it('deleteThread forgets a thread: its next run starts with an empty history', async () => {
    const model = counter();
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    await runtime.generate({ threadId: 't', input: 'one' });
    await runtime.generate({ threadId: 't', input: 'two' });
    expect(model.requests[1]?.messages).toHaveLength(3);
    expect(await runtime.deleteThread('t')).toBe(true);
    expect(await runtime.deleteThread('t')).toBe(false);
    await runtime.generate({ threadId: 't', input: 'three' });
    expect(model.requests[2]?.messages.map((message) => message.role)).toEqual(['user']);
  });

  it('refuses to delete a thread while a run of it is active', async () => {
    const model = new ScriptedModel([{ text: 'slow', delayMs: 2_000 }]);
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const handle = await runtime.run({ threadId: 't', input: 'hi' });
    const error = await runtime.deleteThread('t').catch((caught: unknown) => caught);
    expect(LunationError.hasCode(error, 'thread-busy')).toBe(true);
    handle.cancel();
    await handle.result;
  });

  it('keeps at most maxThreads, dropping the least recently used', async () => {
    const model = counter();
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm' })
      .options({ retention: { maxThreads: 2 } })
      .build();
    await runtime.generate({ threadId: 'a', input: 'a1' });
    await runtime.generate({ threadId: 'b', input: 'b1' });
    await runtime.generate({ threadId: 'a', input: 'a2' }); // a is now the most recently used
    await runtime.generate({ threadId: 'c', input: 'c1' }); // b goes
    await runtime.generate({ threadId: 'a', input: 'a3' });
    await runtime.generate({ threadId: 'b', input: 'b2' });
    const history = (index: number) => model.requests[index]?.messages.length;
    expect(history(4)).toBe(5); // a kept its history
    expect(history(5)).toBe(1); // b started over
  });

  it('drops threads idle past maxIdleMs', async () => {
    const model = counter();
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm' })
      .options({ retention: { maxIdleMs: 20 } })
      .build();
    await runtime.generate({ threadId: 'old', input: 'x' });
    await new Promise((resolve) => setTimeout(resolve, 40));
    await runtime.generate({ threadId: 'new', input: 'y' });
    await runtime.generate({ threadId: 'old', input: 'again' });
    expect(model.requests[2]?.messages).toHaveLength(1);
  });

  it('rejects a retention policy next to a store', () => {
    expect(() =>
      createRuntime()
        .model('m', counter())
        .agent({ id: 'a', model: 'm' })
        .store({} as never)
        .options({ retention: { maxThreads: 1 } })
        .build(),
    ).toThrow(/retention/);
  });
});
