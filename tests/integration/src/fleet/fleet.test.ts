import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Dispatcher } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { openDispatcher } from '../../fixtures/fleet-connection.js';
import { type FleetJournalLine, readJournal } from '../../fixtures/fleet-journal.js';
import { SeededRandom } from '../../fixtures/seeded-random.js';
import { openStore } from '../../fixtures/store-connection.js';
import { startCpuHogs } from './cpu-hogs.js';
import { disturb } from './disturbances.js';
import { fleetBackends } from './fleet-backends.js';
import { fleetSummary } from './fleet-figures.js';
import { checkFleetThread, type FleetViolation, gatherEvidence } from './fleet-invariants.js';
import { threadPlan } from './fleet-plans.js';
import { fleetSettings as settings } from './fleet-settings.js';
import { FleetUserClient } from './fleet-user-client.js';
import { FrontPool } from './front-pool.js';
import type { DrivenRun } from './run-driver.js';
import { fenceAtTarget } from './target-fencing.js';
import { driveThread } from './thread-driver.js';
import { WorkerPool, type WorkerStall } from './worker-pool.js';

const backends = fleetBackends.filter(
  (backend) =>
    settings.backends.length === 0 || settings.backends.some((name) => backend.name.includes(name)),
);

describe.each(backends)('a worker fleet on $name', (backend) => {
  it(
    'completes every run while workers are killed, stalled past their lease and starved, appends fail and users cancel: every invariant of fleet.md holds',
    async () => {
      await backend.ensureReachable();
      const directory = mkdtempSync(join(tmpdir(), `lunation-fleet-${backend.name.split(' ')[0]}-`));
      const label = `${settings.seed}-${process.pid}`;
      const connections = backend.connect(label, directory);
      const journalPath = join(directory, 'journal.jsonl');
      const pool = new WorkerPool({
        store: connections.store,
        dispatcher: connections.dispatcher,
        journal: journalPath,
        leaseTtlMs: settings.leaseTtlMs,
        concurrency: settings.concurrency,
        seed: settings.seed,
        appendFailureRate: settings.appendFailureRate,
      });
      const dispatchers: Dispatcher[] = await Promise.all([
        openDispatcher(connections.dispatcher),
        openDispatcher(connections.dispatcher),
      ]);
      const stores = await Promise.all([openStore(connections.store), openStore(connections.store)]);
      // Two HTTP fronts (`@lunation/http` over `FleetFront`) in processes of their own, killed and stalled too.
      const fronts = new FrontPool({
        store: connections.store,
        dispatcher: connections.dispatcher,
        heartbeatMs: Math.max(200, Math.round(settings.requestTimeoutMs / 4)),
      });
      const users = new FleetUserClient(fronts, {
        requestTimeoutMs: settings.requestTimeoutMs,
        idleTimeoutMs: settings.requestTimeoutMs,
      });
      const random = SeededRandom.derive(settings.seed, backend.name);
      const plans = Array.from({ length: settings.runs }, (_, index) => threadPlan(random, index, settings));
      const hogs = await startCpuHogs(settings.cpuHogs, settings.cpuHogDuty);
      const started = Date.now();
      let driven: DrivenRun[][] = [];
      try {
        await Promise.all([pool.start(settings.workers), fronts.start(2)]);
        const disturbing = disturb(
          pool,
          fronts,
          SeededRandom.derive(settings.seed, backend.name, 'disturbances'),
          {
            minMs: settings.killMinMs,
            maxMs: settings.killMaxMs,
            leaseTtlMs: settings.leaseTtlMs,
            stalls: settings.stalls,
            longStalls: settings.longStalls,
            fronts: settings.frontDisturbances,
            requestTimeoutMs: settings.requestTimeoutMs,
          },
        );
        try {
          driven = await inPool(
            plans,
            settings.inFlight,
            async (plan) => (await driveThread(users, plan, settings.seed, settings.runTimeoutMs)).runs,
          );
        } finally {
          await disturbing.stop();
        }
      } finally {
        await pool.stop();
        await fronts.stop();
        await hogs.stop();
      }
      const seconds = (Date.now() - started) / 1000;

      const journal = readJournal(journalPath);
      writeFileSync(
        join(directory, 'disturbances.json'),
        JSON.stringify(
          { kills: pool.kills, stalls: pool.stalls, freezes: pool.freezes, fronts: fronts.disturbances },
          null,
          1,
        ),
      );
      const deadLetters = await (dispatchers[0] as Dispatcher).deadLetters({ limit: 10_000 });
      // The tools' effects went to a fenced target (the journal): the invariants judge the effects it accepted.
      const target = fenceAtTarget(journal);
      const threads = await inPool(driven, 16, (runs) =>
        gatherEvidence(stores[0]!, dispatchers[0] as Dispatcher, runs, target.accepted, deadLetters),
      );
      // A worker whose event loop froze is, to the fleet, a stalled worker; the freeze itself fails the test.
      const disturbances = { kills: pool.kills, stalls: [...pool.stalls, ...pool.freezes] };
      const violations: FleetViolation[] = threads.flatMap((thread) =>
        checkFleetThread(thread, disturbances),
      );
      const freezes = pool.freezes.map((freeze) => describeFreeze(freeze, journal));
      const summary = fleetSummary(settings, {
        backend: backend.name,
        seconds,
        threads,
        journal: target.accepted,
        target,
        pool,
        fronts,
        users,
        violations,
      });
      console.log(summary);

      await Promise.all(dispatchers.map((dispatcher) => dispatcher.close()));
      await Promise.all(stores.map((store) => store.close()));
      const failures = [...pool.failures, ...fronts.failures.map((failure) => `(front) ${failure}`)];
      if (violations.length > 0 || failures.length > 0 || freezes.length > 0) {
        expect.fail(
          [
            summary,
            ...freezes.map((freeze) => `  worker froze: ${freeze}`),
            ...failures.map((failure) => `  process failure: ${failure}`),
            ...violations
              .slice(0, 60)
              .map((violation) => `  ${violation.invariant} (${violation.threadId}): ${violation.detail}`),
            replay(backend.name),
            `Journal: ${journalPath} (kills, stalls and freezes: ${join(directory, 'disturbances.json')})`,
            `Kept for inspection: the store ${JSON.stringify(connections.store)} and the dispatcher ${JSON.stringify(connections.dispatcher)}`,
          ].join('\n'),
        );
      }
      await backend.cleanup(connections);
      expect(pool.kills.length + pool.stalls.length).toBeGreaterThan(0);
      rmSync(directory, { recursive: true, force: true });
    },
    settings.testTimeoutMs,
  );
});

/** A frozen worker: how long its heartbeats stopped, its last injected append failure and last journal lines. */
function describeFreeze(freeze: WorkerStall, journal: FleetJournalLine[]): string {
  const before = journal.filter(
    (line) => 'worker' in line && line.worker === freeze.worker && line.at <= freeze.start + 1_000,
  );
  const failure = before.filter((line) => line.type === 'append-failure').at(-1);
  const last = before
    .slice(-2)
    .map(
      (line) =>
        `${line.type}${'toolCallId' in line ? ` ${line.toolCallId}` : ''} at ${line.at - freeze.start} ms`,
    )
    .join(', ');
  const length =
    freeze.end === undefined
      ? 'until it was killed or the test ended'
      : `for ${freeze.end - freeze.start} ms`;
  const cause =
    failure?.type === 'append-failure'
      ? `its last injected append failure (run ${failure.runId}, ${failure.when} appending) was ${freeze.start - failure.at} ms before its last heartbeat`
      : 'no append failure was injected in it before';
  return `${freeze.worker} (pid ${freeze.pid}) sent no heartbeat ${length} though the test let it run; ${cause}; last journaled: ${last || 'nothing'}`;
}

/** The command that replays this seed (with the size and disturbances set in the environment). */
function replay(backend: string): string {
  const set = Object.entries(process.env)
    .filter(
      ([name]) =>
        name.startsWith('LUNATION_FLEET_') &&
        name !== 'LUNATION_FLEET_SEED' &&
        name !== 'LUNATION_FLEET_BACKENDS',
    )
    .map(([name, value]) => `${name}=${value} `)
    .join('');
  return `Replay: ${set}LUNATION_FLEET_SEED=${settings.seed} LUNATION_FLEET_BACKENDS=${backend.split(' ')[0]} pnpm vitest run --project integration fleet`;
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
