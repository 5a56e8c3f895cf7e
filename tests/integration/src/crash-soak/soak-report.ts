import type { JournalEntry } from '../../fixtures/soak-journal.js';
import type { OutboxRow } from '../../fixtures/soak-outbox.js';
import { type KillKind, killKinds, type SoakBatch } from '../../fixtures/soak-scenario.js';
import type { BatchOutcome } from './batch-runner.js';
import { type Invariant, invariantNames, type Violation } from './soak-invariants.js';
import { replayCommand, type SoakSettings } from './soak-settings.js';

/** One batch after the soak: what ran, what the journal says, what broke. */
export interface BatchReport {
  batch: SoakBatch;
  outcome: BatchOutcome;
  journal: JournalEntry[];
  violations: Violation[];
  /** The batch's outbox rows (stores with transactions). */
  outbox?: OutboxRow[];
}

export interface SoakSummary {
  store: string;
  seed: number;
  runs: number;
  batches: number;
  processes: number;
  killsLanded: Record<KillKind, number>;
  killsMissed: number;
  /** Sum over landed kills of the runs each one cut short. */
  runsHit: number;
  /** Fewest landed kills any run was cut short by. */
  minKillsPerRun: number;
  /** Runs cut short by at least two kills. */
  runsKilledTwice: number;
  executions: number;
  /** Executions of a call beyond its first. */
  reruns: number;
  decisions: number;
  /** Decisions on `interrupted-call` tickets (the careful tool's calls a crash cut off). */
  interruptedDecisions: number;
  /** Executions and re-runs by tool. */
  tools: Record<string, { executions: number; reruns: number }>;
  /** Outbox rows, and rows beyond one per call (stores with transactions; undefined otherwise). */
  outbox: { rows: number; duplicates: number } | undefined;
  stranded: number;
  crashes: number;
  /** Batches driven beside a live twin sharing their owner, and what the twins did. */
  twins: { batches: number; attempts: number; busy: number; continued: number };
  violations: Record<Invariant, number>;
  seconds: number;
}

export function summarise(store: string, seed: number, reports: BatchReport[], seconds: number): SoakSummary {
  const killsLanded = Object.fromEntries(killKinds.map((kind) => [kind, 0])) as Record<KillKind, number>;
  const violations: Record<Invariant, number> = { 1: 0, 2: 0, 3: 0, 4: 0, 5: 0, 6: 0, 7: 0, 8: 0, 9: 0 };
  const summary: SoakSummary = {
    store,
    seed,
    runs: 0,
    batches: reports.length,
    processes: 0,
    killsLanded,
    killsMissed: 0,
    runsHit: 0,
    minKillsPerRun: Number.POSITIVE_INFINITY,
    runsKilledTwice: 0,
    executions: 0,
    reruns: 0,
    decisions: 0,
    interruptedDecisions: 0,
    tools: {},
    outbox: undefined,
    stranded: 0,
    crashes: 0,
    twins: { batches: 0, attempts: 0, busy: 0, continued: 0 },
    violations,
    seconds,
  };
  for (const { batch, outcome, journal, violations: found, outbox } of reports) {
    if (outbox) {
      summary.outbox ??= { rows: 0, duplicates: 0 };
      summary.outbox.rows += outbox.length;
      const keys = new Set(outbox.map((row) => `${row.thread_id}/${row.tool_call_id}`));
      summary.outbox.duplicates += outbox.length - keys.size;
    }
    summary.runs += batch.runs.length;
    summary.processes += outcome.processes;
    summary.stranded += outcome.stranded.size;
    summary.crashes += outcome.crashes.length;
    if (outcome.twin) {
      summary.twins.batches++;
      summary.twins.attempts += outcome.twin.attempts;
      summary.twins.busy += outcome.twin.busy;
      summary.twins.continued += outcome.twin.continued;
    }
    for (const count of outcome.killsByRun.values()) {
      summary.minKillsPerRun = Math.min(summary.minKillsPerRun, count);
      if (count >= 2) summary.runsKilledTwice++;
    }
    for (const kill of outcome.kills) {
      if (kill.landed) killsLanded[kill.kind]++;
      else summary.killsMissed++;
      summary.runsHit += kill.runsHit;
    }
    const calls = new Set<string>();
    for (const entry of journal) {
      if (entry.type === 'decision') {
        summary.decisions++;
        if (entry.ticketAction === 'interrupted-call') summary.interruptedDecisions++;
      }
      if (entry.type !== 'execution-start') continue;
      summary.executions++;
      summary.tools[entry.toolName] ??= { executions: 0, reruns: 0 };
      const tool = summary.tools[entry.toolName] as { executions: number; reruns: number };
      tool.executions++;
      const call = `${entry.threadId}/${entry.toolCallId}`;
      if (calls.has(call)) {
        summary.reruns++;
        tool.reruns++;
      }
      calls.add(call);
    }
    for (const violation of found) violations[violation.invariant]++;
  }
  if (summary.minKillsPerRun === Number.POSITIVE_INFINITY) summary.minKillsPerRun = 0;
  return summary;
}

export function formatSummary(summary: SoakSummary): string {
  const landed = Object.values(summary.killsLanded).reduce((sum, count) => sum + count, 0);
  const byKind = Object.entries(summary.killsLanded)
    .filter(([, count]) => count > 0)
    .map(([kind, count]) => `${kind} ${count}`)
    .join(', ');
  const names: Record<Invariant, string> = {
    1: 'unapproved executions',
    2: 're-runs of recorded results',
    3: 'unjustified re-runs',
    4: 'lost or partial commits',
    5: 'stranded or failed runs',
    6: 'wrong or missing answers',
    7: 'overlapping executions',
    8: 'fail/ask calls run twice',
    9: 'missing or duplicate effects',
  };
  const violations = Object.entries(summary.violations)
    .map(([invariant, count]) => `#${invariant} ${names[Number(invariant) as Invariant]} ${count}`)
    .join(', ');
  return [
    `crash soak on ${summary.store}: seed ${summary.seed}, ${summary.runs} runs in ${summary.batches} batches, ${summary.seconds.toFixed(1)} s`,
    `  processes ${summary.processes}; kills landed ${landed} (${byKind || 'none'}), missed ${summary.killsMissed}; runs cut short ${summary.runsHit} (${(summary.runsHit / Math.max(1, summary.runs)).toFixed(1)} kills per run, at least ${summary.minKillsPerRun}; ${summary.runsKilledTwice} of ${summary.runs} runs killed twice or more)`,
    `  tool executions ${summary.executions} (re-runs ${summary.reruns}); decisions ${summary.decisions}; stranded runs ${summary.stranded}; crashed processes ${summary.crashes}`,
    `  by tool: ${Object.entries(summary.tools)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, counts]) => `${name} ${counts.executions} (re-runs ${counts.reruns})`)
      .join(', ')}`,
    `  interrupted-call tickets answered ${summary.interruptedDecisions}; outbox ${summary.outbox ? `${summary.outbox.rows} rows, ${summary.outbox.duplicates} duplicates` : 'not on this store (no transactions)'}`,
    `  live twins sharing an owner: ${summary.twins.batches} batches; ${summary.twins.attempts} attempts on running runs, ${summary.twins.busy} refused (thread-busy), ${summary.twins.continued} runs continued by the twin`,
    `  violations by invariant: ${violations}`,
  ].join('\n');
}

const shownPerInvariant = 8;

/** The failure message: every broken invariant with examples, the seed and the commands that replay it. */
export function formatFailure(
  settings: SoakSettings,
  store: string,
  reports: BatchReport[],
  journals: string,
): string {
  const lines: string[] = [
    `The crash soak on ${store} broke the durability invariants (seed ${settings.seed}).`,
  ];
  const all = reports.flatMap((report) =>
    report.violations.map((violation) => ({ ...violation, batch: report.batch.index })),
  );
  for (const invariant of [1, 2, 3, 4, 5, 6, 7, 8, 9] as const) {
    const found = all.filter((violation) => violation.invariant === invariant);
    if (found.length === 0) continue;
    lines.push('', `Invariant ${invariant} — ${invariantNames[invariant]}: ${found.length} violation(s)`);
    for (const violation of found.slice(0, shownPerInvariant)) {
      const { run } = violation;
      lines.push(
        `  run ${run.index} (batch ${violation.batch}, thread ${run.threadId}, ${run.agentId}, ${run.steps.length} steps): ${violation.detail}`,
      );
    }
    if (found.length > shownPerInvariant) lines.push(`  … and ${found.length - shownPerInvariant} more`);
  }
  const crashes = reports.flatMap((report) => report.outcome.crashes);
  if (crashes.length > 0) lines.push('', 'Processes that crashed on their own:', ...crashes);
  const failing = [...new Set(all.map((violation) => violation.batch))];
  lines.push('', `Replay: ${replayCommand(settings, store)}`);
  if (failing.length > 0)
    lines.push(`Replay one failing batch: ${replayCommand(settings, store, failing[0] as number)}`);
  lines.push(`Journals (one JSON line per event): ${journals}`);
  return lines.join('\n');
}
