import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Dispatcher, RunEventRecord } from '@lunation/contract';
import { FleetClient } from '@lunation/runtime';
import { describe, expect, it } from 'vitest';
import type { FleetExecution, FleetPlan } from '../../fixtures/fleet-agent.js';
import { openDispatcher } from '../../fixtures/fleet-connection.js';
import { SeededRandom } from '../../fixtures/seeded-random.js';
import { openStore } from '../../fixtures/store-connection.js';
import { fleetBackends } from './fleet-backends.js';
import { checkFleetRun, type FleetViolation, fleetInvariants, gatherEvidence } from './fleet-invariants.js';
import { type DrivenRun, driveRun } from './run-driver.js';
import { WorkerPool } from './worker-pool.js';

/** The test's size, from the environment; the defaults are CI's (about a minute per backend). */
const settings = {
  seed: Number(process.env.LUNATION_FLEET_SEED ?? Math.floor(Math.random() * 2 ** 31)),
  runs: Number(process.env.LUNATION_FLEET_RUNS ?? 40),
  workers: Number(process.env.LUNATION_FLEET_WORKERS ?? 3),
  concurrency: Number(process.env.LUNATION_FLEET_CONCURRENCY ?? 4),
  /** Runs driven at once by the test's users. */
  inFlight: Number(process.env.LUNATION_FLEET_IN_FLIGHT ?? 12),
  killMinMs: Number(process.env.LUNATION_FLEET_KILL_MIN_MS ?? 800),
  killMaxMs: Number(process.env.LUNATION_FLEET_KILL_MAX_MS ?? 2_000),
  leaseTtlMs: Number(process.env.LUNATION_FLEET_LEASE_TTL_MS ?? 3_000),
};

function planFor(random: SeededRandom, index: number): FleetPlan {
  const steps = Array.from({ length: random.integer(1, 3) }, () =>
    Array.from({ length: random.integer(1, 2) }, () => ({
      tool: random.chance(0.3) ? ('ask' as const) : ('work' as const),
      durationMs: random.integer(100, 1_200),
    })),
  );
  return { label: `r${index}`, steps };
}

/** Runs `work` on every item, at most `limit` at a time. */
async function inPool<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function percentile(sorted: number[], p: number): number {
  return (
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN
  );
}

describe.each(fleetBackends)('a worker fleet on $name', (backend) => {
  it('completes every run while workers are SIGKILLed at random: no recorded result re-run, no unapproved call, every event once', async () => {
    await backend.ensureReachable();
    const directory = mkdtempSync(join(tmpdir(), `lunation-fleet-${backend.name}-`));
    const label = `${settings.seed}-${process.pid}`;
    const connections = backend.connect(label, directory);
    const journal = join(directory, 'executions.jsonl');
    const random = SeededRandom.derive(settings.seed, backend.name);
    const pool = new WorkerPool(
      {
        store: connections.store,
        dispatcher: connections.dispatcher,
        journal,
        leaseTtlMs: settings.leaseTtlMs,
        concurrency: settings.concurrency,
      },
      SeededRandom.derive(settings.seed, backend.name, 'kills'),
    );
    const dispatchers: Dispatcher[] = await Promise.all([
      openDispatcher(connections.dispatcher),
      openDispatcher(connections.dispatcher),
    ]);
    const stores = await Promise.all([openStore(connections.store), openStore(connections.store)]);
    const fronts = [
      new FleetClient({ dispatcher: dispatchers[0] as Dispatcher, store: stores[0]! }),
      new FleetClient({ dispatcher: dispatchers[1] as Dispatcher, store: stores[1]! }),
    ] as const;
    const started = Date.now();
    let driven: DrivenRun[] = [];
    try {
      await pool.start(settings.workers);
      pool.killAtRandom(settings.killMinMs, settings.killMaxMs);
      const plans = Array.from({ length: settings.runs }, (_, index) => planFor(random, index));
      driven = await inPool(plans, settings.inFlight, (plan) =>
        driveRun(
          fronts,
          `fleet-${label}-${plan.label}`,
          plan,
          SeededRandom.derive(settings.seed, plan.label),
        ),
      );
    } finally {
      await pool.stop();
    }
    const seconds = (Date.now() - started) / 1000;

    const lines = readFileSync(journal, 'utf8')
      .split('\n')
      .filter(Boolean)
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as FleetExecution];
        } catch {
          return []; // a line cut short by a kill
        }
      });
    const readLog = async (runId: string) => {
      const records: RunEventRecord[] = [];
      for (;;) {
        const after = records.at(-1)?.id;
        const page = await (dispatchers[0] as Dispatcher).readEvents(runId, after ? { after } : {});
        records.push(...page.events);
        if (page.events.length === 0) return records;
      }
    };
    const violations: FleetViolation[] = [];
    for (const run of driven) {
      violations.push(...checkFleetRun(await gatherEvidence(stores[0]!, run, lines, readLog), pool.kills));
    }
    const reruns = lines.filter((line) => line.type === 'execution-start' && line.rerun).length;
    const latencies = resumeLatencies(lines, pool.kills).sort((a, b) => a - b);
    const summary = [
      `fleet on ${backend.name}: seed ${settings.seed}, ${settings.runs} runs, ${settings.workers} workers × ${settings.concurrency}, ${seconds.toFixed(1)} s`,
      `  workers killed ${pool.kills.length}; tool executions ${lines.filter((line) => line.type === 'execution-start').length} (re-runs ${reruns}); approvals ${driven.reduce((sum, run) => sum + run.approvedAt.size, 0)}; stream reconnects ${driven.reduce((sum, run) => sum + run.reconnects, 0)}; events seen ${driven.reduce((sum, run) => sum + run.seen.length, 0)}`,
      `  kill -> the cut-off call runs again on another worker: p50 ${(percentile(latencies, 50) / 1000).toFixed(2)} s, p99 ${(percentile(latencies, 99) / 1000).toFixed(2)} s (${latencies.length} calls)`,
      `  violations: ${Object.keys(fleetInvariants)
        .map((name) => `${name} ${violations.filter((violation) => violation.invariant === name).length}`)
        .join(', ')}`,
    ].join('\n');
    console.log(summary);

    await Promise.all(dispatchers.map((dispatcher) => dispatcher.close()));
    await Promise.all(stores.map((store) => store.close()));
    await backend.cleanup(connections);
    expect(pool.failures).toEqual([]);
    expect(pool.kills.length).toBeGreaterThan(0);
    if (violations.length > 0) {
      expect.fail(
        `${summary}\n${violations
          .slice(0, 20)
          .map((violation) => `  ${violation.invariant} (${violation.threadId}): ${violation.detail}`)
          .join(
            '\n',
          )}\nReplay: LUNATION_FLEET_SEED=${settings.seed} pnpm vitest run --project integration fleet\nJournal: ${journal}`,
      );
    }
    rmSync(directory, { recursive: true, force: true });
  }, 600_000);
});

/** For each call a kill cut off mid-execution: the time from the kill to its re-run on another worker. */
function resumeLatencies(
  lines: FleetExecution[],
  kills: ReadonlyArray<{ worker: string; at: number }>,
): number[] {
  const latencies: number[] = [];
  for (const kill of kills) {
    const cut = lines.filter(
      (line) =>
        line.worker === kill.worker &&
        line.type === 'execution-start' &&
        line.at <= kill.at &&
        !lines.some(
          (finish) =>
            finish.type === 'execution-finish' &&
            finish.worker === kill.worker &&
            finish.toolCallId === line.toolCallId,
        ),
    );
    for (const start of cut) {
      const again = lines.find(
        (line) =>
          line.type === 'execution-start' &&
          line.threadId === start.threadId &&
          line.toolCallId === start.toolCallId &&
          line.at > kill.at,
      );
      if (again) latencies.push(again.at - kill.at);
    }
  }
  return latencies;
}
