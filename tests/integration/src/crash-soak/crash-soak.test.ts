import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJournal } from '../../fixtures/soak-journal.js';
import { prepareOutbox, readOutbox } from '../../fixtures/soak-outbox.js';
import { createBatch, type SoakBatch } from '../../fixtures/soak-scenario.js';
import { openStore } from '../../fixtures/store-connection.js';
import { runBatch } from './batch-runner.js';
import { soakBackends } from './soak-backends.js';
import { checkRun } from './soak-invariants.js';
import { type BatchReport, formatFailure, formatSummary, summarise } from './soak-report.js';
import { soakSettings } from './soak-settings.js';
import { readThreadEvidence } from './thread-evidence.js';

const settings = soakSettings(soakBackends.map((backend) => backend.name));
const backends = soakBackends.filter((backend) => settings.stores.includes(backend.name));
const batchCount = Math.ceil(settings.runs / settings.batchSize);
const batches: SoakBatch[] = [];
for (let index = 0; index < batchCount; index++)
  if (settings.onlyBatch === undefined || settings.onlyBatch === index)
    batches.push(createBatch(settings.seed, index, settings.batchSize, settings.runs));
/** A bound far above the soak's real duration, so a hang fails instead of blocking CI. */
const timeoutMs = 120_000 + batches.length * 60_000;

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

describe.each(backends)('crash soak on $name', (backend) => {
  it(
    'keeps every durability invariant through kill -9 at random and targeted points',
    async () => {
      await backend.ensureReachable();
      const started = Date.now();
      const directory = mkdtempSync(join(tmpdir(), `lunation-soak-${backend.name}-`));
      const reports = await inPool(batches, settings.parallel, async (batch): Promise<BatchReport> => {
        const connection = backend.connect(`${settings.seed}-b${batch.index}`, directory);
        const journalPath = join(directory, `batch-${batch.index}.jsonl`);
        // Every `twinEvery`-th batch runs beside a live twin sharing its owner, on longer leases: the twin must
        // be refused while a driving process lives, and may take a run over only after that process was killed.
        const twin = settings.twinEvery > 0 && batch.index % settings.twinEvery === settings.twinEvery - 1;
        try {
          await prepareOutbox(connection);
          const outcome = await runBatch(batch, {
            connection,
            journalPath,
            leaseTtlMs: twin ? settings.twinLeaseTtlMs : settings.leaseTtlMs,
            minKillsPerRun: settings.minKillsPerRun,
            ...(settings.sameOwner || twin ? { owner: `soak-batch-${batch.index}` } : {}),
            twin,
          });
          const journal = readJournal(journalPath);
          const outbox = connection.store === 'redis' ? undefined : await readOutbox(connection);
          const store = await openStore(connection);
          try {
            const violations = [];
            for (const run of batch.runs) {
              violations.push(
                ...checkRun({
                  run,
                  journal: journal.filter(
                    (entry) =>
                      entry.type === 'killed' || ('threadId' in entry && entry.threadId === run.threadId),
                  ),
                  store: await readThreadEvidence(store, run.threadId),
                  stranded: outcome.stranded.get(run.threadId),
                  ...(outbox ? { outbox: outbox.filter((row) => row.thread_id === run.threadId) } : {}),
                }),
              );
            }
            return { batch, outcome, journal, violations, ...(outbox ? { outbox } : {}) };
          } finally {
            await store.close();
          }
        } finally {
          await backend.cleanup(connection);
        }
      });
      const summary = summarise(backend.name, settings.seed, reports, (Date.now() - started) / 1000);
      console.log(formatSummary(summary));

      // A soak that hardly killed anything proves nothing.
      const landed = Object.values(summary.killsLanded).reduce((sum, count) => sum + count, 0);
      expect(landed).toBeGreaterThanOrEqual(Math.ceil(batches.length / 2));
      expect(summary.executions).toBeGreaterThan(0);
      const failed = reports.some(
        (report) => report.violations.length > 0 || report.outcome.crashes.length > 0,
      );
      if (failed) expect.fail(formatFailure(settings, backend.name, reports, directory));
      rmSync(directory, { recursive: true, force: true });
    },
    timeoutMs,
  );
});
