import { type Clock, systemClock } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime } from '../src/index.js';
import { reply, ScriptedModel } from '../src/testing/index.js';

/** The real clock, read `skewMs` ahead (negative: behind). */
function skewed(skewMs: number): Clock {
  return { ...systemClock, now: () => systemClock.now() + skewMs };
}

describe('clock skew between processes sharing a store', () => {
  it("creates a thread's next run after its latest, though this process's clock is behind the one that made it", async () => {
    const store = new MemoryStore();
    const runtime = (name: string, skewMs: number) =>
      createRuntime()
        .model('m', new ScriptedModel([reply(`from ${name}`)]))
        .agent({ id: 'a', model: 'm' })
        .store(store)
        .options({ owner: name, clock: skewed(skewMs) })
        .build();
    const ahead = runtime('ahead', 60_000);
    const behind = runtime('behind', -60_000);
    const first = await ahead.generate({ threadId: 't', input: 'one', runId: 'run-1' });
    const second = await behind.generate({ threadId: 't', input: 'two', runId: 'run-2' });
    expect([first.finalText, second.finalText]).toEqual(['from ahead', 'from behind']);
    expect((await store.getLatestRun('t'))?.identity.runId).toBe('run-2');
    const runs = await store.listRuns('t');
    expect(runs.items.map((run) => run.identity.runId)).toEqual(['run-1', 'run-2']);
  });
});
