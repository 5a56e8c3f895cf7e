import { parseArgs } from 'node:util';
import { FRAMEWORKS, type FrameworkId } from './frameworks/index.js';
import type { Mode, StoreKind } from './harness.js';
import { Script } from './script.js';
import { createScratch } from './workloads/scratch.js';

/**
 * Runs one W1 variant (S=10, sequential) for a while, for `node --cpu-prof`:
 * `pnpm --filter @lunation/bench run profile -- w1:lunation:generate:sqlite --seconds 10`.
 * Then `pnpm --filter @lunation/bench run profile:summary -- <file.cpuprofile>`.
 */
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '10' },
    steps: { type: 'string', default: '10' },
    /** Build a fresh harness (runtime, store) every this many runs, dropping what the old one kept. */
    recreate: { type: 'string' },
  },
});
const [id = 'w1:lunation:generate:none'] = positionals;
const [kind, framework, mode, store] = id.split(':') as [string, FrameworkId, Mode, StoreKind];
if (kind !== 'w1' || !FRAMEWORKS[framework])
  throw new Error(`Expected a W1 task id like w1:lunation:generate:sqlite, got ${id}`);
const steps = Number(values.steps);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const scratch = createScratch(redisUrl, 'profile');
const script = new Script(scratch.runPrefix);
const create = await FRAMEWORKS[framework].load();
const open = () =>
  create({ mode, store, script, workDir: scratch.dir, redisUrl, redisKeyPrefix: `${scratch.prefix}:` });
let harness = await open();
for (let index = 0; index < 200; index++) await harness.run(steps);
const recreate = values.recreate === undefined ? 0 : Number(values.recreate);
let runs = 0;
const started = performance.now();
const until = started + Number(values.seconds) * 1000;
while (performance.now() < until) {
  await harness.run(steps);
  runs++;
  if (recreate > 0 && runs % recreate === 0) {
    await harness.close();
    harness = await open();
  }
}
const elapsed = performance.now() - started;
console.log(`${id}: ${runs} runs of ${steps} steps, ${((elapsed * 1000) / runs).toFixed(1)} µs/run`);
await harness.close();
await scratch.dispose();
