/**
 * Measures how long a thread whose process was SIGKILLed mid-tool waits before another process continues it:
 * a restart with the same owner (taken over once the lease went three quarters of its ttl unrenewed) against another owner
 * (waits for the lease to expire). Usage, from tests/integration:
 *
 *   node --conditions=@lunation/source --import tsx scripts/restart-recovery.ts [trials=10] [ttlMs=10000] [stores=sqlite,redis,postgres]
 *
 * Each trial kills the holder at a random point of its renewal cycle and starts the recovering process at once.
 * It prints the time from the kill to the moment the new process holds the thread (`run()` resolved), and the
 * part of it that the new process spent starting (about a second under tsx, more on a busy machine). Needs
 * Redis and PostgreSQL like the tests.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresStore } from '@lunation/store-postgres';
import type { ProcessConfig } from '../fixtures/agent-process.js';
import { startAgentProcess } from '../src/process-harness.js';

const [trials = 10, ttlMs = 10_000] = process.argv.slice(2, 4).map(Number);
const stores = (process.argv[4] ?? 'sqlite,redis,postgres').split(',') as Array<ProcessConfig['store']>;
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const directory = mkdtempSync(join(tmpdir(), 'lunation-recovery-'));
let counter = 0;

function connection(
  store: ProcessConfig['store'],
): Pick<ProcessConfig, 'store' | 'path' | 'redisUrl' | 'keyPrefix' | 'postgresUrl' | 'schema'> {
  counter++;
  if (store === 'sqlite') return { store, path: join(directory, `db-${counter}.sqlite`) };
  if (store === 'redis')
    return { store, redisUrl, keyPrefix: `lunation-recovery:${process.pid}:${counter}:` };
  return { store, postgresUrl, schema: `lunation_recovery_${process.pid}_${counter}` };
}

async function trial(store: ProcessConfig['store'], sameOwner: boolean): Promise<[number, number]> {
  const base = {
    ...connection(store),
    threadId: 'thread-recovery',
    sideEffectLog: join(directory, `log-${counter}`),
    leaseTtlMs: ttlMs,
  };
  const holder = startAgentProcess({ ...base, mode: 'crash', owner: 'service' });
  await holder.waitFor('running');
  await new Promise((resolve) => setTimeout(resolve, Math.random() * (ttlMs / 3)));
  holder.child.kill('SIGKILL');
  await holder.exited;
  const killedAt = Date.now();
  const recovery = startAgentProcess({ ...base, mode: 'recover', owner: sameOwner ? 'service' : 'other' });
  const recovering = await recovery.waitFor('recovering');
  const ended = await recovery.waitFor('ended');
  await recovery.exited;
  if (base.schema) {
    const cleanup = new PostgresStore({ connectionString: postgresUrl, schema: base.schema });
    await cleanup.dropSchema().finally(() => cleanup.close());
  }
  return [Number(ended.startedAt) - killedAt, Number(recovering.at) - killedAt];
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;

try {
  console.log(
    `kill -9 mid-tool -> another process holds the thread; leaseTtlMs ${ttlMs}, ${trials} trials each`,
  );
  for (const store of stores) {
    for (const sameOwner of [true, false]) {
      const held: number[] = [];
      const starts: number[] = [];
      for (let index = 0; index < trials; index++) {
        const [total, start] = await trial(store, sameOwner);
        held.push(total);
        starts.push(start);
      }
      const figures = (times: number[]) => {
        const sorted = [...times].sort((a, b) => a - b);
        const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
        return `p50 ${s(percentile(sorted, 50))}  p90 ${s(percentile(sorted, 90))}  max ${s(sorted.at(-1)!)}`;
      };
      const label = sameOwner ? 'restart, same owner' : 'another owner      ';
      console.log(
        `${store.padEnd(8)} ${label}  kill -> held: ${figures(held)}   (process start: ${figures(starts)})`,
      );
    }
  }
} finally {
  rmSync(directory, { recursive: true, force: true });
}
