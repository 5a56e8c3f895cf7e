import { parseArgs } from 'node:util';
import type { LunationStore } from '@lunation/contract';
import { createLunation } from './frameworks/lunation.js';
import type { StoreKind } from './harness.js';
import { stats } from './measure.js';
import { Script } from './script.js';
import { openStore } from './stores.js';
import { createScratch } from './workloads/scratch.js';

/**
 * A store's own cost in W1, without the runtime: records the store calls one Lunation run of S steps makes
 * (through a recording proxy around a real store), then replays that exact call sequence, with fresh thread and
 * run ids, against a fresh store, many times. µs per step of the replay is what the store adds to a step.
 * `pnpm --filter @lunation/bench run store-replay -- memory` (or sqlite, redis).
 */
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    steps: { type: 'string', default: '10' },
    runs: { type: 'string', default: '2000' },
    reps: { type: 'string', default: '7' },
  },
});
const kind = (positionals[0] ?? 'memory') as StoreKind;
const steps = Number(values.steps);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const scratch = createScratch(redisUrl, 'store-replay');
const settings = { workDir: scratch.dir, redisUrl, redisKeyPrefix: `${scratch.prefix}:` };

interface Call {
  method: keyof LunationStore;
  /** JSON of the arguments, with the run's thread id and run id marked for substitution. */
  args: string;
}

// 1. Record one run's calls.
const recorded: Array<{ method: keyof LunationStore; args: unknown[] }> = [];
const recordingStore = await openStore(kind, { ...settings, fileName: 'record.sqlite' });
if (!recordingStore) throw new Error(`store-replay needs a store, not ${kind}`);
const recorder = new Proxy(recordingStore, {
  get(target, property, receiver) {
    const value = Reflect.get(target, property, receiver);
    if (typeof value !== 'function' || property === 'close' || property === 'init') return value;
    return (...args: unknown[]) => {
      recorded.push({ method: property as keyof LunationStore, args: structuredClone(args) });
      return value.apply(target, args);
    };
  },
});
const script = new Script('replay-');
const harness = await createLunation({
  mode: 'generate',
  store: 'none',
  script,
  ...settings,
  storeInstance: recorder,
});
await harness.run(steps);
await harness.close();
const first = recorded.find((call) => call.method === 'commit')?.args[0] as {
  threadId: string;
  run?: { identity: { runId: string } };
};
const threadId = first.threadId;
const runId = first.run?.identity.runId ?? '';
const calls: Call[] = recorded.map(({ method, args }) => ({
  method,
  args: JSON.stringify(args).replaceAll(threadId, '\u0000T').replaceAll(runId, '\u0000R'),
}));
console.log(
  `${kind}: a run of ${steps} steps makes ${calls.length} store calls: ${calls.map((call) => call.method).join(', ')}`,
);

// 2. Replay it with fresh ids against a fresh store.
const store = await openStore(kind, { ...settings, fileName: 'replay.sqlite' });
if (!store) throw new Error('no store');
const runs = Number(values.runs);
let sequence = 0;
const prepare = (count: number) =>
  Array.from({ length: count }, () => {
    const id = sequence++;
    return calls.map((call) => ({
      method: call.method,
      args: JSON.parse(
        call.args.replaceAll('\u0000T', `replay-thread-${id}`).replaceAll('\u0000R', `replay-run-${id}`),
      ) as unknown[],
    }));
  });
const replay = async (batch: ReturnType<typeof prepare>) => {
  for (const run of batch)
    for (const call of run)
      await (store[call.method] as (...args: unknown[]) => Promise<unknown>).apply(store, call.args);
};
await replay(prepare(Math.min(500, runs)));
const samples: number[] = [];
for (let rep = 0; rep < Number(values.reps); rep++) {
  const batch = prepare(runs);
  const started = performance.now();
  await replay(batch);
  samples.push(((performance.now() - started) * 1000) / runs / steps);
}
const result = stats(samples);
console.log(
  `${kind}: ${result.median.toFixed(2)} µs per step (min ${result.min.toFixed(2)}, max ${result.max.toFixed(2)}), the store's own cost in a run of ${steps} steps`,
);
await store.close();
await recordingStore.close();
await scratch.dispose();
process.exit(0);
