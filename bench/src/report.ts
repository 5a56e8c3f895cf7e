import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FRAMEWORKS, type FrameworkId } from './frameworks/index.js';
import type { Mode, StoreKind } from './harness.js';
import { benchDir } from './machine.js';
import { mcpSection } from './mcp-section.js';
import type { Stats } from './measure.js';
import type { PostgresStoreKind } from './postgres.js';
import type {
  BenchResults,
  BenchRun,
  W1PostgresRoundTripResult,
  W1Result,
  W1RoundTripResult,
  W2Result,
  W3Result,
} from './results.js';

const TARGET_STEPS = '10';

function w1Results(run: BenchRun): W1Result[] {
  return run.results.filter((result): result is W1Result => result.kind === 'w1');
}

function w2Results(run: BenchRun): W2Result[] {
  return run.results.filter((result): result is W2Result => result.kind === 'w2');
}

function w3Results(run: BenchRun): W3Result[] {
  return run.results.filter((result): result is W3Result => result.kind === 'w3');
}

function roundTrips(run: BenchRun): W1RoundTripResult | undefined {
  return run.results.find((result): result is W1RoundTripResult => result.kind === 'w1-redis-round-trips');
}

function postgresRoundTrips(run: BenchRun): W1PostgresRoundTripResult | undefined {
  return run.results.find(
    (result): result is W1PostgresRoundTripResult => result.kind === 'w1-postgres-round-trips',
  );
}

const POSTGRES_STORES: readonly PostgresStoreKind[] = ['postgres', 'postgres-async'];

/**
 * One PostgresStore variant's round trips per extra step ((S=10 − S=1) ÷ 9), the run's fixed cost, and the
 * checkpoint commit's round trips per call.
 */
function postgresStepFigures(result: W1PostgresRoundTripResult | undefined, store: PostgresStoreKind) {
  if (result?.status !== 'ok') return undefined;
  const one = result.counts.find((count) => count.store === store && count.steps === 1);
  const ten = result.counts.find((count) => count.store === store && count.steps === 10);
  if (!one || !ten) return undefined;
  const perStep = (ten.roundTripsPerRun - one.roundTripsPerRun) / 9;
  return { perStep, fixed: one.roundTripsPerRun - perStep, commit: ten.calls.commit?.roundTripsPerCall };
}

/** µs per step: the median µs per run at S=10, divided by 10. */
function perStep(result: W1Result | undefined): number | undefined {
  const timing = result?.timings[TARGET_STEPS];
  return timing ? timing.perRunUs.median / Number(TARGET_STEPS) : undefined;
}

/** CPU µs per step: the median CPU µs per run at S=10, divided by 10. */
function cpuPerStep(result: W1Result | undefined): number | undefined {
  const timing = result?.timings[TARGET_STEPS];
  return timing?.cpuPerRunUs ? timing.cpuPerRunUs.median / Number(TARGET_STEPS) : undefined;
}

/** The extra µs of each step beyond the first: (median at S=10 − median at S=1) / 9. */
function marginalPerStep(result: W1Result): number | undefined {
  const ten = result.timings['10'];
  const one = result.timings['1'];
  return ten && one ? (ten.perRunUs.median - one.perRunUs.median) / 9 : undefined;
}

function findW1(run: BenchRun, framework: FrameworkId, mode: Mode, store: StoreKind): W1Result | undefined {
  return w1Results(run).find(
    (result) =>
      result.status === 'ok' &&
      result.framework === framework &&
      result.mode === mode &&
      result.store === store &&
      !result.traced,
  );
}

/** The traced W1 of Lunation on a store (every run traced; the workspace run only). */
function findTracedW1(run: BenchRun, store: StoreKind): W1Result | undefined {
  return w1Results(run).find(
    (result) =>
      result.status === 'ok' &&
      result.framework === 'lunation' &&
      result.mode === 'generate' &&
      result.store === store &&
      result.traced === true,
  );
}

/** A W1 row's store, and whether every run was traced. */
function w1StoreLabel(result: W1Result): string {
  const store = storeLabel(result.framework, result.store);
  return result.traced ? `${store}, every run traced (OTel)` : store;
}

function findW2(
  run: BenchRun,
  framework: FrameworkId,
  mode: Mode = 'generate',
  store: StoreKind = 'none',
): W2Result | undefined {
  return w2Results(run).find(
    (result) =>
      result.status === 'ok' &&
      result.framework === framework &&
      result.mode === mode &&
      (result.store ?? 'none') === store,
  );
}

/** W2 without a store (the peers' comparison) and with one (Lunation checkpointing every step). */
function isDurableW2(result: W2Result): boolean {
  return (result.store ?? 'none') !== 'none';
}

function number(value: number, digits?: number): string {
  const places = digits ?? (Math.abs(value) >= 100 ? 0 : Math.abs(value) >= 10 ? 1 : 2);
  return value.toLocaleString('en-US', { minimumFractionDigits: places, maximumFractionDigits: places });
}

function range(value: Stats, scale = 1): string {
  return `${number(value.median * scale)} (${number(value.min * scale)}–${number(value.max * scale)})`;
}

function ratio(value: number | undefined, reference: number | undefined): string {
  if (value === undefined || reference === undefined || reference === 0) return '—';
  const r = value / reference;
  return `${number(r, r >= 10 ? 0 : r >= 1 ? 1 : 2)}×`;
}

function bytes(value: number): string {
  const abs = Math.abs(value);
  if (abs >= 1024 ** 3) return `${number(value / 1024 ** 3, 1)} GB`;
  if (abs >= 1024 * 1024) return `${number(value / (1024 * 1024), 1)} MB`;
  if (abs >= 1024) return `${number(value / 1024, 1)} KB`;
  return `${number(value, 0)} B`;
}

function version(run: BenchRun, commit: string, framework: FrameworkId): string {
  const name = FRAMEWORKS[framework].packageName;
  if (!name) return '—';
  const found = run.versions[name] ?? '?';
  return framework === 'lunation' ? `${found} (${commit.split(' ')[0]}, ${run.lunationFrom})` : found;
}

/** "Node 24.21.0": the run's Node version, first column of the tables. */
function nodeLabel(run: BenchRun): string {
  return `Node ${run.node.slice(1)}`;
}

function storeLabel(framework: FrameworkId, store: StoreKind): string {
  return FRAMEWORKS[framework].stores[store] ?? store;
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function table(head: string[], rows: string[][]): string {
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  for (const row of rows) lines.push(`| ${row.map(cell).join(' | ')} |`);
  return lines.join('\n');
}

function unavailable(result: { status: string; reason?: string }): string {
  return `${result.status}${result.reason ? ` (${result.reason.split('\n')[0]})` : ''}`;
}

function w1Table(runs: BenchRun[], commit: string, mode: Mode): string {
  const rows: string[][] = [];
  for (const run of runs) {
    const bare = perStep(findW1(run, 'bare', mode, 'none'));
    for (const result of w1Results(run).filter((entry) => entry.mode === mode)) {
      const framework = FRAMEWORKS[result.framework];
      const head = [
        nodeLabel(run),
        framework.name,
        version(run, commit, result.framework),
        framework.api[mode],
        w1StoreLabel(result),
      ];
      if (result.status !== 'ok') {
        rows.push([...head, unavailable(result), '', '', '', '', '', '', '']);
        continue;
      }
      const step = perStep(result);
      const cpu = cpuPerStep(result);
      const marginal = marginalPerStep(result);
      const lunation = perStep(findW1(run, 'lunation', mode, result.store));
      rows.push([
        ...head,
        result.timings['1'] ? range(result.timings['1'].perRunUs) : '—',
        result.timings['10'] ? range(result.timings['10'].perRunUs) : '—',
        step === undefined ? '—' : number(step),
        marginal === undefined ? '—' : number(marginal),
        cpu === undefined ? '—' : number(cpu),
        ratio(step, bare),
        // A traced row against the same runs untraced: what tracing every run costs.
        result.framework === 'lunation' && !result.traced ? '1×' : ratio(step, lunation),
        result.retainedBytesPerRun === undefined ? '—' : bytes(Math.max(0, result.retainedBytesPerRun)),
      ]);
    }
  }
  return table(
    [
      'Node',
      'Framework',
      'Version',
      'API',
      'Store / checkpointer',
      'S=1: µs/run',
      'S=10: µs/run',
      'µs/step (S=10 ÷ 10)',
      'marginal µs/step',
      'CPU µs/step',
      '× bare loop',
      '× Lunation (same store)',
      'heap kept / run',
    ],
    rows,
  );
}

function contention(run: BenchRun, cores: number): string {
  const loads = run.results
    .filter((result) => result.otherLoad !== undefined)
    .map((result) => ({ id: result.id, load: result.otherLoad as number }));
  if (loads.length === 0) return "other processes' CPU use was not recorded (needs Linux /proc/stat).";
  const sorted = [...loads].sort((a, b) => a.load - b.load);
  const median = sorted[sorted.length >> 1]?.load ?? 0;
  const worst = sorted.slice(-3).reverse();
  return `other processes (Redis and PostgreSQL included, so a store task's figure counts its server's work for it) kept ${number(median, 2)} of ${cores} cores busy during the median task; the busiest: ${worst
    .map((entry) => `${entry.id} ${number(entry.load, 2)}`)
    .join(', ')}.`;
}

function roundTripTable(runs: BenchRun[]): string {
  const rows: string[][] = [];
  const marginals: string[] = [];
  for (const run of runs) {
    const result = roundTrips(run);
    if (!result) continue;
    if (result.status !== 'ok') {
      rows.push([nodeLabel(run), unavailable(result), '', '', '', '', '']);
      continue;
    }
    for (const count of result.counts)
      rows.push([
        nodeLabel(run),
        String(count.steps),
        String(count.runs),
        number(count.roundTripsPerRun, 1),
        number(count.roundTripsPerRun / count.steps, 2),
        number(count.commandsPerRun, 1),
        Object.entries(count.commands)
          .sort((a, b) => b[1] - a[1])
          .map(([command, calls]) => `${command} ${number(calls, 1)}`)
          .join(', '),
      ]);
    const one = result.counts.find((count) => count.steps === 1);
    const ten = result.counts.find((count) => count.steps === 10);
    if (one && ten)
      marginals.push(`${nodeLabel(run)} **${number((ten.roundTripsPerRun - one.roundTripsPerRun) / 9, 2)}**`);
  }
  if (rows.length === 0) return '_Not measured._';
  return `${table(
    [
      'Node',
      'S',
      'runs',
      'round trips / run',
      'round trips / step',
      'commands / run',
      'commands / run by command',
    ],
    rows,
  )}\n\nMarginal round trips per extra step: ${marginals.join(', ') || '—'}.`;
}

function postgresRoundTripTable(runs: BenchRun[]): string {
  const rows: string[][] = [];
  const notes: string[] = [];
  for (const run of runs) {
    const result = postgresRoundTrips(run);
    if (!result) continue;
    if (result.status !== 'ok') {
      rows.push([nodeLabel(run), unavailable(result), '', '', '', '', '', '']);
      continue;
    }
    for (const count of result.counts)
      rows.push([
        nodeLabel(run),
        storeLabel('lunation', count.store),
        String(count.steps),
        String(count.runs),
        number(count.roundTripsPerRun, 1),
        number(count.roundTripsPerRun / count.steps, 2),
        Object.entries(count.calls)
          .sort((a, b) => b[1].perRun - a[1].perRun)
          .map(
            ([method, entry]) =>
              `${method} ${number(entry.perRun, 1)} (${number(entry.roundTripsPerCall, 2)})`,
          )
          .join(', '),
        Object.entries(count.messagesPerRun)
          .map(([type, perRun]) => `${type} ${number(perRun, 1)}`)
          .join(', '),
      ]);
    const figures = POSTGRES_STORES.map((store) => {
      const found = postgresStepFigures(result, store);
      return found
        ? `${storeLabel('lunation', store)} **${number(found.perStep, 2)}** per extra step, ${number(found.fixed, 1)} per run`
        : `${storeLabel('lunation', store)} —`;
    });
    const overlapped = result.counts.reduce((sum, count) => sum + count.overlappedCalls, 0);
    const floor = result.floor;
    notes.push(
      `- **${nodeLabel(run)}**: ${figures.join('; ')}. PostgreSQL ${result.server?.version ?? '?'}, server default \`synchronous_commit\` = \`${result.server?.synchronousCommit ?? '?'}\` (what the \`PostgresStore\` rows use). ${overlapped === 0 ? 'No store call overlapped another.' : `${overlapped} store calls overlapped another.`}${floor ? ` The server's own floor on one connection (median µs): a \`SELECT 1\` round trip ${number(floor.selectUs, 0)}, a one-row \`INSERT\` commit ${number(floor.commitUs, 0)} with \`synchronous_commit\` on and ${number(floor.commitAsyncUs, 0)} with it off.` : ''}`,
    );
  }
  if (rows.length === 0) return '_Not measured._';
  return `${table(
    [
      'Node',
      'Store',
      'S',
      'runs',
      'round trips / run',
      'round trips / step',
      'store calls / run (round trips per call)',
      'protocol messages / run',
    ],
    rows,
  )}

${notes.join('\n')}`;
}

function w2Table(runs: BenchRun[], commit: string): string {
  const rows: string[][] = [];
  for (const run of runs) {
    const bare = findW2(run, 'bare')?.wallMs?.median;
    const lunation = findW2(run, 'lunation')?.wallMs?.median;
    for (const result of w2Results(run)) {
      if (isDurableW2(result)) continue;
      const framework = FRAMEWORKS[result.framework];
      const head = [
        nodeLabel(run),
        framework.name,
        version(run, commit, result.framework),
        framework.api[result.mode],
      ];
      if (result.status !== 'ok' || !result.wallMs || !result.memory) {
        rows.push([...head, unavailable(result), '', '', '', '', '']);
        continue;
      }
      const wall = result.wallMs.median;
      rows.push([
        ...head,
        range(result.wallMs),
        ratio(wall, result.idealMs),
        ratio(wall, bare),
        result.framework === 'lunation' && result.mode === 'generate' ? '1×' : ratio(wall, lunation),
        bytes(result.memory.rssPerRunBytes),
        bytes(result.memory.heapPerRunBytes),
      ]);
    }
  }
  return table(
    [
      'Node',
      'Framework',
      'Version',
      'API',
      'wall ms',
      '× ideal',
      '× bare loop',
      '× Lunation',
      'RSS / in-flight run',
      'heap / in-flight run',
    ],
    rows,
  );
}

/** Names the tasks measured in a later, partial run and merged in (`pnpm bench --merge`), with when and where. */
function mergedNote(runs: BenchRun[]): string {
  const lines: string[] = [];
  for (const run of runs) {
    const merged = run.results.filter((result) => result.measured);
    const groups = new Map<string, string[]>();
    for (const result of merged) {
      const key = `${result.measured!.date.slice(0, 10)} at commit ${result.measured!.commit} (Lunation from ${result.measured!.lunationFrom})`;
      groups.set(key, [...(groups.get(key) ?? []), `\`${result.id}\``]);
    }
    for (const [when, ids] of groups) lines.push(`- ${nodeLabel(run)}: ${ids.join(', ')} measured ${when}.`);
  }
  return lines.length === 0
    ? ''
    : `\nMeasured later, in a partial run merged into these results (the rest as above):\n\n${lines.join('\n')}\n`;
}

/** W2 with each store: what checkpointing every step costs under concurrency, against the in-process run. */
function w2StoreTable(runs: BenchRun[]): string {
  const rows: string[][] = [];
  for (const run of runs) {
    const inProcess = findW2(run, 'lunation')?.wallMs?.median;
    for (const result of w2Results(run)) {
      if (!isDurableW2(result)) continue;
      const head = [nodeLabel(run), storeLabel('lunation', result.store!)];
      if (result.status !== 'ok' || !result.wallMs || !result.memory) {
        rows.push([...head, unavailable(result), '', '', '']);
        continue;
      }
      rows.push([
        ...head,
        range(result.wallMs),
        ratio(result.wallMs.median, result.idealMs),
        ratio(result.wallMs.median, inProcess),
        bytes(result.memory.heapPerRunBytes),
      ]);
    }
  }
  return table(['Node', 'Store', 'wall ms', '× ideal', '× in process', 'heap / in-flight run'], rows);
}

function w3Table(runs: BenchRun[]): string {
  const rows: string[][] = [];
  for (const run of runs) {
    for (const result of w3Results(run)) {
      const head = [
        nodeLabel(run),
        result.store === 'sqlite'
          ? `SqliteStore (file, better-sqlite3 ${run.versions['better-sqlite3 (SqliteStore)'] ?? '?'})`
          : storeLabel('lunation', result.store),
        number(result.threads, 0),
      ];
      if (result.status !== 'ok' || !result.suspend || !result.resume || !result.memory) {
        rows.push([...head, unavailable(result), '', '', '', '', '', '']);
        continue;
      }
      const { baseline, suspended, resumePeakRss } = result.memory;
      rows.push([
        ...head,
        `${number(result.suspend.perSecond, 0)}/s (${number(result.suspend.seconds, 1)} s)`,
        `${number(result.resume.perSecond, 0)}/s (${number(result.resume.seconds, 1)} s)`,
        bytes(baseline.rss),
        `${bytes(suspended.rss)} (${bytes(suspended.rss - baseline.rss)})`,
        `${bytes(suspended.heapUsed)} (${bytes(suspended.heapUsed - baseline.heapUsed)})`,
        bytes((suspended.heapUsed - baseline.heapUsed) / result.threads),
        bytes(resumePeakRss),
      ]);
    }
  }
  return table(
    [
      'Node',
      'Store',
      'threads',
      'suspend rate',
      'resume rate',
      'RSS baseline',
      'RSS, all suspended (Δ)',
      'heap used, all suspended (Δ)',
      'heap Δ / thread',
      'peak RSS while resuming',
    ],
    rows,
  );
}

interface Target {
  name: string;
  measured: string;
  met: boolean | undefined;
}

/** Issue 15's targets, judged on one run. */
function targets(run: BenchRun): Target[] {
  const list: Target[] = [];
  const lunation = perStep(findW1(run, 'lunation', 'generate', 'none'));
  const aiSdk = perStep(findW1(run, 'ai-sdk', 'generate', 'none'));
  const lunationStream = perStep(findW1(run, 'lunation', 'stream', 'none'));
  const bareStream = perStep(findW1(run, 'bare', 'stream', 'none'));
  const sqlite = perStep(findW1(run, 'lunation', 'generate', 'sqlite'));
  const memoryStore = perStep(findW1(run, 'lunation', 'generate', 'memory'));
  // The same comparisons in CPU time, which other processes on the machine disturb less than wall time.
  const cpu = (framework: FrameworkId, mode: Mode, store: StoreKind) =>
    cpuPerStep(findW1(run, framework, mode, store));
  const cpuRatio = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || b === 0
      ? ''
      : `; CPU ${number(a)} vs ${number(b)} µs, ${number(a / b, 2)}×`;
  const cpuLower = (a: number | undefined, b: number | undefined) =>
    a === undefined || b === undefined || a === 0
      ? ''
      : `; CPU ${number(a)} vs ${number(b)} µs, ${number(b / a, 2)}× lower`;
  const check = (
    name: string,
    value: number | undefined,
    ok: (value: number) => boolean,
    show: (v: number) => string,
  ) =>
    list.push({
      name,
      measured: value === undefined ? 'not measured' : show(value),
      met: value === undefined ? undefined : ok(value),
    });
  check(
    'W1 µs/step, no store: ≥10× lower than AI SDK generateText',
    lunation !== undefined && aiSdk !== undefined ? aiSdk / lunation : undefined,
    (value) => value >= 10,
    (value) =>
      `${number(value, 2)}× lower (${number(lunation ?? 0)} vs ${number(aiSdk ?? 0)} µs${cpuLower(cpu('lunation', 'generate', 'none'), cpu('ai-sdk', 'generate', 'none'))})`,
  );
  check(
    'W1 streaming µs/step, no store: ≤5× the bare loop',
    lunationStream !== undefined && bareStream !== undefined ? lunationStream / bareStream : undefined,
    (value) => value <= 5,
    (value) =>
      `${number(value, 2)}× (${number(lunationStream ?? 0)} vs ${number(bareStream ?? 0)} µs${cpuRatio(cpu('lunation', 'stream', 'none'), cpu('bare', 'stream', 'none'))})`,
  );
  check(
    'W1 with SQLite checkpointing (file): ≤100 µs/step',
    sqlite,
    (value) => value <= 100,
    (value) => {
      const used = cpu('lunation', 'generate', 'sqlite');
      return `${number(value)} µs/step${used === undefined ? '' : ` (CPU ${number(used)} µs, both threads: the store checkpoints the log on a second one)`}`;
    },
  );
  check(
    'W1 with MemoryStore: ≤1.5× no store',
    memoryStore !== undefined && lunation !== undefined ? memoryStore / lunation : undefined,
    (value) => value <= 1.5,
    (value) =>
      `${number(value, 2)}× (${number(memoryStore ?? 0)} vs ${number(lunation ?? 0)} µs${cpuRatio(cpu('lunation', 'generate', 'memory'), cpu('lunation', 'generate', 'none'))})`,
  );
  const rtt = roundTrips(run);
  const ten = rtt?.status === 'ok' ? rtt.counts.find((count) => count.steps === 10) : undefined;
  const one = rtt?.status === 'ok' ? rtt.counts.find((count) => count.steps === 1) : undefined;
  // A step's cost is what one more step adds; a run's fixed round trips (lease, load, create, release) are
  // reported beside it.
  check(
    'W1 with Redis: ≤2 round trips/step',
    one && ten ? (ten.roundTripsPerRun - one.roundTripsPerRun) / 9 : undefined,
    (value) => value <= 2,
    (value) =>
      `${number(value, 2)} per step${one && ten ? ` (plus ${number(one.roundTripsPerRun - value, 1)} per run)` : ''}`,
  );
  const w2Lunation = findW2(run, 'lunation');
  const w2Bare = findW2(run, 'bare');
  check(
    'W2 wall time: ≤1.2× the bare loop',
    w2Lunation?.wallMs && w2Bare?.wallMs ? w2Lunation.wallMs.median / w2Bare.wallMs.median : undefined,
    (value) => value <= 1.2,
    (value) =>
      `${number(value, 2)}× (${number(w2Lunation?.wallMs?.median ?? 0)} vs ${number(w2Bare?.wallMs?.median ?? 0)} ms)`,
  );
  check(
    'W2 memory: ≤20 KB RSS per in-flight run',
    w2Lunation?.memory?.rssPerRunBytes,
    (value) => value <= 20 * 1024,
    (value) => bytes(value),
  );
  check(
    'W2 memory: ≤10 KB heap per in-flight run',
    w2Lunation?.memory?.heapPerRunBytes,
    (value) => value <= 10 * 1024,
    (value) => bytes(value),
  );
  for (const store of ['postgres', 'redis'] as const) {
    const durable = findW2(run, 'lunation', 'generate', store);
    check(
      `W2 with ${storeLabel('lunation', store)}: ≤4× in process`,
      durable?.wallMs && w2Lunation?.wallMs ? durable.wallMs.median / w2Lunation.wallMs.median : undefined,
      (value) => value <= 4,
      (value) =>
        `${number(value, 2)}× (${number(durable?.wallMs?.median ?? 0)} vs ${number(w2Lunation?.wallMs?.median ?? 0)} ms)`,
    );
  }
  const postgres = postgresRoundTrips(run);
  const [postgresOn, postgresOff] = POSTGRES_STORES.map((store) => postgresStepFigures(postgres, store));
  // Judged on both synchronous_commit settings: the setting changes how long a commit waits, not its round trips.
  const bothSettings = (
    name: string,
    value: (figures: NonNullable<typeof postgresOn>) => number | undefined,
    ok: (value: number) => boolean,
    show: (on: number, off: number) => string,
  ) => {
    const on = postgresOn ? value(postgresOn) : undefined;
    const off = postgresOff ? value(postgresOff) : undefined;
    list.push({
      name,
      measured: on === undefined || off === undefined ? 'not measured' : show(on, off),
      met: on === undefined || off === undefined ? undefined : ok(on) && ok(off),
    });
  };
  bothSettings(
    'W1 with PostgreSQL: 1 round trip per checkpoint commit',
    (figures) => figures.commit,
    (value) => value === 1,
    (on, off) =>
      `${number(on, 2)} round trips per commit with \`synchronous_commit\` on, ${number(off, 2)} with it off`,
  );
  bothSettings(
    'W1 with PostgreSQL: 2 round trips per single-tool step',
    (figures) => figures.perStep,
    (value) => Math.abs(value - 2) < 1e-9,
    (on, off) =>
      `${number(on, 2)} per step with \`synchronous_commit\` on, ${number(off, 2)} with it off (plus ${number(postgresOn?.fixed ?? 0, 1)} per run for lease, load, thread creation and release)`,
  );
  return list;
}

function targetTable(runs: BenchRun[]): string {
  const perRun = runs.map((run) => targets(run));
  const names = perRun[0]?.map((target) => target.name) ?? [];
  const mark = (target: Target | undefined) =>
    target === undefined || target.met === undefined
      ? '—'
      : `${target.met ? 'yes' : '**no**'}: ${target.measured}`;
  return table(
    ['Target', ...runs.map((run) => nodeLabel(run))],
    names.map((name, index) => [name, ...perRun.map((list) => mark(list[index]))]),
  );
}

/** A plain-text summary for the console. */
export function renderSummary(bench: BenchResults): string {
  const lines: string[] = [];
  for (const run of bench.runs) {
    lines.push(`== ${run.title} (Lunation from ${run.lunationFrom})`);
    for (const mode of ['generate', 'stream'] as const) {
      lines.push(`W1 ${mode}: µs per run at S=1 / S=10, µs per step`);
      for (const result of w1Results(run).filter((entry) => entry.mode === mode)) {
        const label =
          `  ${FRAMEWORKS[result.framework].name} [${result.store}${result.traced ? ', traced' : ''}]`.padEnd(
            34,
          );
        if (result.status !== 'ok') {
          lines.push(`${label} ${unavailable(result).split('\n')[0]}`);
          continue;
        }
        const one = result.timings['1']?.perRunUs.median;
        const ten = result.timings['10']?.perRunUs.median;
        lines.push(
          `${label} ${one === undefined ? '—' : number(one)} / ${ten === undefined ? '—' : number(ten)} µs, ${number(perStep(result) ?? 0)} µs/step`,
        );
      }
    }
    const rtt = roundTrips(run);
    if (rtt) {
      lines.push('Redis round trips (Lunation, generate):');
      if (rtt.status !== 'ok') lines.push(`  ${unavailable(rtt)}`);
      for (const count of rtt.counts)
        lines.push(
          `  S=${count.steps}: ${number(count.roundTripsPerRun, 1)} round trips/run, ${number(count.commandsPerRun, 1)} commands/run`,
        );
    }
    const postgres = postgresRoundTrips(run);
    if (postgres) {
      lines.push('PostgreSQL round trips (Lunation, generate):');
      if (postgres.status !== 'ok') lines.push(`  ${unavailable(postgres)}`);
      for (const count of postgres.counts)
        lines.push(
          `  ${count.store} S=${count.steps}: ${number(count.roundTripsPerRun, 1)} round trips/run, commit ${number(count.calls.commit?.roundTripsPerCall ?? 0, 2)} per call`,
        );
    }
    lines.push('W2: wall ms (median), RSS / heap per in-flight run');
    for (const result of w2Results(run)) {
      const store = isDurableW2(result) ? ` ${result.store}` : '';
      const label = `  ${FRAMEWORKS[result.framework].name} [${result.mode}]${store}`.padEnd(34);
      if (result.status !== 'ok' || !result.wallMs || !result.memory)
        lines.push(`${label} ${unavailable(result)}`);
      else
        lines.push(
          `${label} ${number(result.wallMs.median)} ms (ideal ${result.idealMs}), ${bytes(result.memory.rssPerRunBytes)} / ${bytes(result.memory.heapPerRunBytes)}`,
        );
    }
    lines.push('W3: suspend / resume rates, RSS with all suspended');
    for (const result of w3Results(run)) {
      const label = `  ${result.store} × ${result.threads}`.padEnd(34);
      if (result.status !== 'ok' || !result.suspend || !result.resume || !result.memory)
        lines.push(`${label} ${unavailable(result)}`);
      else
        lines.push(
          `${label} ${number(result.suspend.perSecond, 0)}/s / ${number(result.resume.perSecond, 0)}/s, RSS ${bytes(result.memory.suspended.rss)}`,
        );
    }
    if (bench.smoke) {
      lines.push('Targets: not evaluated in a smoke run (tiny sizes, no real warm-up).');
      continue;
    }
    lines.push('Targets:');
    for (const target of targets(run))
      lines.push(
        `  ${target.met === undefined ? '-' : target.met ? '✓' : '✗'} ${target.name}: ${target.measured}`,
      );
  }
  return lines.join('\n');
}

/** Results of the layout before runs per Node version: one run, the Node version in `machine`. */
interface SingleRunResults {
  date: string;
  smoke: boolean;
  lunationFrom: 'source' | 'dist';
  /** Set by hand where the recorded `lunationFrom` was wrong. */
  lunationFromNote?: string;
  machine: BenchResults['machine'] & { node: string };
  versions: Record<string, string>;
  config: unknown;
  results: BenchRun['results'];
}

/** Reads results of either layout as runs. */
export function normalize(bench: BenchResults | SingleRunResults): BenchResults {
  // Read from JSON: either layout.
  if ('runs' in bench) return bench;
  const { machine, results, versions, lunationFrom } = bench;
  return {
    date: bench.date,
    smoke: bench.smoke,
    machine,
    config: bench.config,
    runs: [
      {
        id: 'node20',
        title: `Node ${machine.node.slice(1)}`,
        node: machine.node,
        versions,
        lunationFrom,
        lunationFiles: {},
        results,
      },
    ],
  };
}

/** Lunation's headline figures of a run (and, for W1, their CPU time), for the comparison with an earlier run. */
function headline(run: BenchRun): Array<[string, number | undefined, string, number | undefined]> {
  const w1 = (mode: Mode, store: StoreKind) => findW1(run, 'lunation', mode, store);
  const w2 = findW2(run, 'lunation');
  const row = (
    name: string,
    result: W1Result | undefined,
  ): [string, number | undefined, string, number | undefined] => [
    name,
    perStep(result),
    'µs',
    cpuPerStep(result),
  ];
  return [
    row('W1 µs/step, no store', w1('generate', 'none')),
    row('W1 µs/step, MemoryStore', w1('generate', 'memory')),
    row('W1 µs/step, SqliteStore (file)', w1('generate', 'sqlite')),
    row('W1 µs/step, RedisStore', w1('generate', 'redis')),
    row('W1 µs/step, PostgresStore', w1('generate', 'postgres')),
    row('W1 µs/step, PostgresStore (synchronous_commit off)', w1('generate', 'postgres-async')),
    row('W1 streaming µs/step, no store', w1('stream', 'none')),
    row('W1 streaming µs/step, SqliteStore (file)', w1('stream', 'sqlite')),
    ['W2 wall ms (ideal 60)', w2?.wallMs?.median, 'ms', undefined],
    ['W2 RSS / in-flight run', w2?.memory?.rssPerRunBytes, 'bytes', undefined],
    ['W2 heap / in-flight run', w2?.memory?.heapPerRunBytes, 'bytes', undefined],
  ];
}

/** Median cores kept busy by other processes during a run's tasks. */
function medianLoad(run: BenchRun): number | undefined {
  const loads = run.results.flatMap((result) => (result.otherLoad === undefined ? [] : [result.otherLoad]));
  return loads.length === 0 ? undefined : loads.sort((a, b) => a - b)[loads.length >> 1];
}

function comparison(bench: BenchResults, baseline: BenchResults | undefined): string {
  const before = baseline?.runs[0];
  if (!baseline || !before) return '_No earlier run recorded (bench/results/baseline.json)._';
  const show = (value: number | undefined, unit: string) =>
    value === undefined ? '—' : unit === 'bytes' ? bytes(value) : `${number(value)} ${unit}`;
  const withCpu = (value: number | undefined, unit: string, cpu: number | undefined) =>
    cpu === undefined ? show(value, unit) : `${show(value, unit)}, CPU ${number(cpu)}`;
  const earlier = headline(before);
  const rows = earlier.map(([name, value, unit, cpu], index) => [
    name,
    withCpu(value, unit, cpu),
    ...bench.runs.map((run) => {
      const [, now, , nowCpu] = headline(run)[index] ?? [name, undefined, unit, undefined];
      const wall = now === undefined || value === undefined || value === 0 ? '' : ` (${ratio(now, value)})`;
      const used =
        nowCpu === undefined
          ? ''
          : `, CPU ${number(nowCpu)}${cpu === undefined || cpu === 0 ? '' : ` (${ratio(nowCpu, cpu)})`}`;
      return `${show(now, unit)}${wall}${used}`;
    }),
  ]);
  const load = (run: BenchRun) => {
    const value = medianLoad(run);
    return value === undefined ? '' : `, other load ${number(value, 2)}`;
  };
  const from = baseline as BenchResults & { lunationFromNote?: string };
  return `Earlier figures: the run of ${baseline.date.slice(0, 10)} at commit ${baseline.machine.commit}, ${nodeLabel(before)}, Lunation from ${before.lunationFrom}${from.lunationFromNote ? ` (${from.lunationFromNote})` : ''}. In brackets: now ÷ then. "other load" is the median of the cores other processes kept busy during the run's tasks: wall times compare only between runs with similar load; CPU times are steadier.

${table(['Lunation', `then (${nodeLabel(before)}${load(before)})`, ...bench.runs.map((run) => `now (${nodeLabel(run)}${load(run)})`)], rows)}`;
}

function runHeader(run: BenchRun, commit: string, cores: number): string {
  const versions = Object.entries(run.versions)
    .map(([name, value]) => `\`${name}\` ${value}`)
    .join(', ');
  const from =
    run.lunationFrom === 'dist'
      ? 'its built `dist/` (every child process checked that each `@lunation/*` package resolved to `dist/`, and fails otherwise)'
      : run.lunationFrom === 'source'
        ? 'its TypeScript source through tsx'
        : 'a mix of source and dist';
  return `- **${run.title}.** Versions: ${versions}. Lunation at commit ${commit}, loaded from ${from}${run.id === 'node24' ? ', installed with npm from `pnpm pack` tarballs as a user would get it' : ''}. Contention: ${contention(run, cores)}`;
}

export function renderMarkdown(input: BenchResults, baselineInput?: BenchResults): string {
  const bench = normalize(input);
  const baseline = baselineInput ? normalize(baselineInput) : undefined;
  const { machine, runs } = bench;
  const config = bench.config as {
    w1: {
      timing: { reps: number; repMs: number; warmupMs: number; warmupRuns: number; warmupMaxMs: number };
    };
    w2: { runs: number; steps: number; modelDelayMs: number; minReps: number; maxReps: number };
    w3: { threads: number; concurrency: number };
  };
  return `# Benchmarks

<!-- Generated by \`pnpm bench\` (bench/src/report.ts); do not edit by hand. -->

Framework overhead of Lunation against a hand-written loop and four peers, measured side by side on
${bench.date.slice(0, 10)} in ${runs.length === 1 ? 'one run' : `${runs.length} runs, one per Node version`}. Every model is scripted and answers at once (W2: after a 20 ms timer), so the figures are
the frameworks' own cost. Every harness checks every run: exactly S model calls, S−1 executions of \`add\` returning
\`{ sum: 3 }\`, and the final answer "done"; a run that does not is an error, not a data point.

**Machine:** ${machine.cpu}, ${machine.cores} cores, ${bytes(machine.memoryBytes)} memory, ${machine.platform}.

${runs.map((run) => runHeader(run, machine.commit, machine.cores)).join('\n')}
${mergedNote(runs)}
Figures taken while other work ran on the machine are slower and noisier than on an idle one.

## Targets

${targetTable(runs)}

µs/step is the median µs per run at S=10 divided by 10 (so it includes each run's fixed cost, spread over 10 steps);
round trips/step is what one more step adds. The targets are meant for a machine with nothing else running; where
other processes kept the cores busy (see each run's contention above), wall times stretch, so the W1 rows also give
the CPU time of the same runs (this process's threads only).

${profileNotes()}

## Compared with the previous figures

${comparison(bench, baseline)}

## W1: tool loop

One agent, one async tool \`add({a, b}) -> {sum}\` with a zod schema. In a run of S steps the model calls \`add\` with
\`{"a":1,"b":2}\` at steps 1..S−1 and answers "done" at step S; each run gets a fresh thread. Runs are sequential:
after a warm-up of at least ${config.w1.timing.warmupRuns} runs and ${config.w1.timing.warmupMs} ms (at most ${config.w1.timing.warmupMaxMs} ms) for each S, ${config.w1.timing.reps} repetitions of about
${config.w1.timing.repMs} ms each are timed; each figure is the median µs per run over the repetitions, with (min–max).
"marginal µs/step" is (S=10 − S=1) ÷ 9, the cost of one more step. "CPU µs/step" is the same run's CPU time
(this process, all threads, GC included) ÷ 10: it does not count waiting (Redis, a busy machine), so it is the steadier
figure when other work shares the machine. "heap kept / run" is the heap still in use after
the last run and a full GC, divided by the runs made (threads a framework keeps in memory: Lunation without a store
keeps every thread in the process, as do MemoryStore and MemorySaver). Each framework and variant runs in its own
Node process.

### Non-streaming (await the result)

${w1Table(runs, machine.commit, 'generate')}

### Streaming (consume every event)

${w1Table(runs, machine.commit, 'stream')}

![W1 µs per step](benchmarks-w1.svg)

### Redis round trips (Lunation, RedisStore, non-streaming)

${roundTripTable(runs)}

Counted by a TCP proxy between the store and Redis: a round trip begins whenever the client sends bytes after
Redis last answered, so pipelined or MULTI-batched commands count once. Commands are \`INFO commandstats\` deltas
on the server (commands a Lua script runs are counted one by one, as Redis counts them; \`evalsha\` is the script
call). Each figure includes the run's fixed cost (lease, load, thread creation, release).

### PostgreSQL round trips (Lunation, PostgresStore, non-streaming)

${postgresRoundTripTable(runs)}

Counted by a TCP proxy between the store's pool and the server: a round trip begins whenever the client sends bytes
after the server last answered. The protocol messages are the client's, parsed from the stream: each call is one
extended-protocol exchange (\`B\` Bind, \`D\` Describe, \`E\` Execute, \`S\` Sync, written together; \`P\` Parse only the
first time a connection sees a statement), so round trips and \`S\` messages agree. A store call's round trips are the
proxy's count while it was in flight. Each figure includes the run's fixed cost (lease, load, thread creation,
release). The "synchronous_commit off" variant sets it per connection (libpq \`options\`); with it on, a commit waits
for the write-ahead log's flush to disk (the floor's commit figures show what that costs on this machine).

## W2: concurrency

${config.w2.runs} concurrent runs of S=${config.w2.steps}; the model awaits a ${config.w2.modelDelayMs} ms timer on every call, so the ideal wall time
is ${config.w2.steps * config.w2.modelDelayMs} ms. Wall time: median (min–max) of ${config.w2.minReps}–${config.w2.maxReps} batches (fewer for slow frameworks) after a warm-up batch. Memory: in a fresh process,
after a 50-run warm-up and a full GC (\`--expose-gc\`), the baseline; then all ${config.w2.runs} runs are held in their last model
call, GC again, and (sample − baseline) ÷ ${config.w2.runs}. No store. RSS is the coarser figure: pages V8 committed during
the warm-up are reused, so RSS can rise less than the heap (or even fall); heap / in-flight run is the steadier one.

${w2Table(runs, machine.commit)}

The same ${config.w2.runs} runs with a store, Lunation only: every step checkpointed, each run taking and releasing its
thread's lease (the peers' W2 above keeps nothing). PostgresStore sends the calls that wait while all 10 of its
connections are busy together, one round trip and one transaction for up to 32 (\`callBatching: 'auto'\`).

${w2StoreTable(runs)}

## W3: many suspended threads (Lunation)

${config.w3.threads.toLocaleString('en-US')} threads, each left holding a run suspended on an approval in the store: a ToolGate plugin suspends every
\`add\` call (\`{ type: 'suspend', ticket: { message: 'approve?' } }\`). Runtime A suspends them all
(\`runtime.generate({ threadId, input })\` → \`status: 'waiting'\`, one open ticket); then runtime B, on a fresh store
connection as another process would, resumes each with \`runtime.generate({ threadId, decisions: [{ decisionId,
ticketId, action: 'resume' }] })\` and checks the tool ran and the run ended "done" after 2 steps. ${config.w3.concurrency} runs in flight
at a time. Memory is the whole process after a full GC; it includes the harness's list of ${config.w3.threads.toLocaleString('en-US')} ticket ids.

${w3Table(runs)}

## Fairness notes

- Each framework gets a minimal scripted model of its own kind: Lunation a \`ModelProvider\` (async generator of
  parts), the AI SDK \`MockLanguageModelV3\` (AI SDK 6) or \`MockLanguageModelV4\` (AI SDK 7) from \`ai/test\`
  (\`doGenerate\` / \`doStream\`), Mastra the same \`MockLanguageModelV4\` (Mastra runs AI SDK models), LangGraph a
  \`BaseChatModel\` subclass (\`_generate\` / \`_streamResponseChunks\`, \`bindTools\` returns itself; it JSON-parses
  the arguments as a provider integration would), OpenAI Agents JS a \`Model\` (\`getResponse\` /
  \`getStreamedResponse\`). All read the run key from the first user message and follow the same script.
- Every framework's tool is \`async\`. The bare loop JSON-parses and zod-validates the arguments and awaits the tool.
- Stop conditions: AI SDK \`stopWhen: stepCountIs(S)\` (7: \`isStepCount(S)\`), Mastra \`maxSteps: S\`, OpenAI Agents
  \`maxTurns: S + 1\`, Lunation's default \`maxRounds\` (50), LangGraph's default \`recursionLimit\` (25); none is reached.
- Mastra runs without memory or storage (no thread is kept); OpenAI Agents JS with tracing disabled (no exporter is
  reachable; tracing would otherwise queue spans).
- LangGraph's \`SqliteSaver\` gets \`synchronous = NORMAL\` (it sets WAL itself), the same durability as Lunation's
  \`SqliteStore\` defaults. MemorySaver, MemoryStore and the SQLite files keep every thread of the run. On Node 24 the
  install overrides \`@langchain/langgraph-checkpoint-sqlite\`'s better-sqlite3 (^12) with 13: better-sqlite3 12 aborts
  the process on Node 24.19+ (see \`@lunation/store-sqlite\`'s README), and 13 is what npm gives SqliteStore there.
- No forced GC between timed repetitions: after one, V8 shrinks the young generation and the next runs of
  allocation-heavy code took twice as long, which would measure the harness rather than the framework.
- \`MockLanguageModelV3\`/\`V4\` record every call; the harness clears those records after each run.
- The Node 20 run uses the workspace's packages: the newest peers that still run on Node 20 (\`ai\` 6, whose 7 needs
  Node 22; \`@openai/agents\` 0.14, whose later \`openai\` dependency needs Node 22; no Mastra, which needs Node 22.13).
  The Node 24 run uses the current releases, pinned in \`bench/node24/package.json\`.

## Reproduce

\`\`\`sh
pnpm install
pnpm bench            # both runs (Redis at 127.0.0.1:6379 or REDIS_URL, PostgreSQL at POSTGRES_URL or
                      # postgres://postgres@127.0.0.1:5432/test): writes this file, docs/benchmarks-w1.svg and
                      # bench/results/latest.json; the Node 24 run installs Node 24 and its packages first
pnpm bench --node 24  # one run only (or --node workspace); writes to a temp dir
pnpm bench --smoke    # a few iterations at tiny sizes with the same checks, this Node only; writes to a temp dir
pnpm bench --only w1:lunation   # only tasks whose id contains the text; writes to a temp dir
\`\`\`

Profiles: \`pnpm --filter @lunation/bench run profile -- w1:lunation:generate:sqlite\` (see bench/README.md).

${w4Section()}

${w5Section()}

${mcpSection()}
${tracingSection(runs)}
`;
}

interface TracingFile {
  when: string;
  node: string;
  cores: number;
  loadAverage: number[];
  lunationFrom: string;
  versions: Record<string, string>;
  figures: Array<{
    store: StoreKind;
    steps: number;
    rounds: number;
    off: { perStepUs: number; cpuPerStepUs: number };
    on: { perStepUs: number; cpuPerStepUs: number };
    sampled?: { perStepUs: number; cpuPerStepUs: number };
    overheadPercent: number;
    cpuOverheadPercent: number;
    spansPerStep: number;
  }>;
}

/**
 * What tracing every run costs in this run's W1 rows (Lunation, non-streaming, no store and SQLite): each traced
 * task against the same task untraced, each in its own process.
 */
function tracedRows(runs: BenchRun[]): string {
  const rows: string[][] = [];
  for (const run of runs) {
    for (const store of ['none', 'sqlite'] as const) {
      const traced = findTracedW1(run, store);
      const off = findW1(run, 'lunation', 'generate', store);
      if (!traced || !off) continue;
      const [offStep, onStep] = [perStep(off), perStep(traced)];
      const [offCpu, onCpu] = [cpuPerStep(off), cpuPerStep(traced)];
      const added = (on: number | undefined, before: number | undefined) =>
        on === undefined || before === undefined ? '—' : `${number(((on - before) / before) * 100, 1)} %`;
      rows.push([
        nodeLabel(run),
        storeLabel('lunation', store),
        offStep === undefined ? '—' : number(offStep, 1),
        onStep === undefined ? '—' : number(onStep, 1),
        added(onStep, offStep),
        offCpu === undefined || onCpu === undefined ? '—' : `${number(offCpu, 1)} → ${number(onCpu, 1)}`,
        added(onCpu, offCpu),
      ]);
    }
  }
  if (rows.length === 0) return '';
  return [
    "**In this run** (the W1 table's traced rows: `w1:lunation:generate:<store>:traced`, every run traced, each task in its own process like the untraced one; µs per step at S = 10, medians; the instruction counts below are steadier):",
    table(
      ['Node', 'store', 'untraced µs/step', 'traced µs/step', 'added (wall)', 'CPU µs/step', 'added (CPU)'],
      rows,
    ),
  ].join('\n\n');
}

/** The tracing overhead: this run's traced W1 rows, then its own command (`bench:tracing`, `bench/results/w1-tracing.json`). */
function tracingSection(runs: BenchRun[]): string {
  const intro = [
    '## W1 with OpenTelemetry tracing',
    '',
    'W1 (S = 10, non-streaming) with `@lunation/otel` on a real SDK tracer (`TracerProvider` from',
    '`@opentelemetry/sdk-trace`, always sampled, a `BatchSpanProcessor` with its default settings whose exporter',
    "counts the spans and drops them: the SDK's and Lunation's cost per span, not an exporter's; see",
    '`bench/src/tracing/sdk-tracing.ts`). Default options: a `chat` and an `execute_tool` span per step, checkpoints',
    "summed on the run's span (`checkpoints: 'summary'`). Target: tracing every run adds at most 10 % to a W1 step.",
    'Measured three ways: the traced rows of the W1 table above; `pnpm --filter @lunation/bench run bench:tracing`',
    '(untraced, traced and 10 % sampled in one process, alternating round by round; `bench/results/w1-tracing.json`);',
    'and instruction counts (`scripts/tracing-callgrind.sh`, by hand, in the notes below).',
  ].join('\n');
  const inThisRun = tracedRows(runs);
  let file: TracingFile;
  try {
    file = JSON.parse(readFileSync(join(benchDir, 'results/w1-tracing.json'), 'utf8')) as TracingFile;
  } catch {
    return [intro, inThisRun, 'No `bench:tracing` results yet.', tracingNotes()].filter(Boolean).join('\n\n');
  }
  const rows = file.figures.map((figure) => [
    storeLabel('lunation', figure.store),
    number(figure.off.perStepUs, 1),
    number(figure.on.perStepUs, 1),
    `${number(figure.overheadPercent, 1)} %`,
    `${number(figure.off.cpuPerStepUs, 1)} → ${number(figure.on.cpuPerStepUs, 1)} (${number(figure.cpuOverheadPercent, 1)} %)`,
    figure.sampled
      ? `${number(figure.sampled.perStepUs, 1)} (${number(((figure.sampled.perStepUs - figure.off.perStepUs) / figure.off.perStepUs) * 100, 1)} %)`
      : '',
    number(figure.spansPerStep, 2),
  ]);
  const versions = Object.entries(file.versions)
    .map(([name, version]) => `\`${name}\` ${version}`)
    .join(', ');
  const load = file.loadAverage.map((value) => value.toFixed(1)).join(' / ');
  const from = file.lunationFrom === 'dist' ? 'its built `dist/`' : 'TypeScript source';
  const sqlite = file.figures.find((figure) => figure.store === 'sqlite');
  const verdict = sqlite
    ? `Target (≤10 % CPU on SqliteStore, every run traced): ${sqlite.cpuOverheadPercent <= 10 ? 'met' : '**not met**'} in this \`bench:tracing\` run, ${number(sqlite.cpuOverheadPercent, 1)} % CPU (${number(sqlite.overheadPercent, 1)} % wall, which load moves most).`
    : '';
  return [
    intro,
    inThisRun,
    `**\`bench:tracing\`, Node ${file.node.replace(/^v/, '')}** (${file.when.slice(0, 10)}; load average ${load} on ${file.cores} cores; Lunation from ${from}; ${file.figures[0]?.rounds ?? 0} rounds). Versions: ${versions}.`,
    table(
      [
        'store',
        'off µs/step',
        'on µs/step',
        'added (wall)',
        'CPU µs/step off → on (added)',
        '10 % sampled µs/step (added)',
        'spans/step (on)',
      ],
      rows,
    ),
    verdict,
    tracingNotes(),
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** bench/tracing-notes.md: instruction counts and before/after comparisons, kept by hand beside the figures. */
function tracingNotes(): string {
  try {
    return readFileSync(join(benchDir, 'tracing-notes.md'), 'utf8').trim();
  } catch {
    return '';
  }
}

interface W5File {
  when: string;
  node: string;
  loadAverage?: number[];
  lunationFrom: string;
  settings: {
    runs: number;
    concurrencyPerWorker: number;
    modelDelayMs: number;
    steps: number;
    leaseTtlMs: number;
  };
  throughput: Array<{
    workers: number;
    runsPerSecond: number;
    submitToFirstStepMs: { p50: number; p99: number };
  }>;
  kill?: { trials: number; hits: number; killToRerunMs: { p50: number; p99: number; max: number } };
}

/** W5 comes from its own command (`bench:w5`, one results file per backend), shown with what it ran on. */
function w5Section(): string {
  const intro = [
    '## W5: a worker fleet',
    '',
    'Worker processes (`AgentWorker`, Lunation from its built `dist/`) on one backend: the Redis store and the BullMQ',
    'dispatcher, or the PostgreSQL store and the pg-boss dispatcher; one process submits through a `FleetClient`',
    'and follows every run. Throughput: runs of S = 3 (the model awaits 20 ms per call) submitted at once, from the',
    'first submit to the last `run-end`; submit → first `step-start` as the client sees it. Kill → continue: a',
    "run's worker SIGKILLed mid-tool (two workers sharing a lease owner, `leaseTtlMs` 6000, 2 s claim locks); from",
    'the kill to the cut-off call running again on the other worker, as the client sees it. From',
    '`pnpm --filter @lunation/bench run bench:w5 [--backend postgres]` (`bench/results/w5.json`,',
    "`bench/results/w5-postgres.json`), not from the runs above. Every process shares the machine's cores (2",
    'here): more worker processes add throughput only while cores are idle.',
  ].join('\n');
  const sections = [
    { file: 'w5.json', title: 'BullMQ, the Redis store' },
    { file: 'w5-postgres.json', title: 'pg-boss, the PostgreSQL store' },
  ].map(({ file, title }) => w5Backend(file, title));
  return [intro, ...sections].join('\n\n');
}

function w5Backend(name: string, title: string): string {
  let file: W5File;
  try {
    file = JSON.parse(readFileSync(join(benchDir, 'results', name), 'utf8')) as W5File;
  } catch {
    return `### ${title}\n\nNo results yet.`;
  }
  const load = file.loadAverage
    ? `; load average ${file.loadAverage.map((value) => value.toFixed(1)).join(' / ')}`
    : '';
  const rows = file.throughput.map((figure) => [
    String(figure.workers),
    number(figure.runsPerSecond, 0),
    number(figure.submitToFirstStepMs.p50, 1),
    number(figure.submitToFirstStepMs.p99, 1),
  ]);
  const kill = file.kill
    ? `Kill → the cut-off call running again on another worker (${file.kill.hits} kills that hit the run, of ${file.kill.trials}): p50 ${number(file.kill.killToRerunMs.p50 / 1000, 2)} s, p99 ${number(file.kill.killToRerunMs.p99 / 1000, 2)} s, max ${number(file.kill.killToRerunMs.max / 1000, 2)} s.`
    : '';
  return [
    `### ${title}`,
    `**Node ${file.node.replace(/^v/, '')}** (${file.when.slice(0, 10)}${load} on 2 cores; Lunation from ${file.lunationFrom === 'dist' ? 'its built `dist/`' : 'TypeScript source'}; ${file.settings.runs} runs, ${file.settings.concurrencyPerWorker} threads per worker).`,
    table(['workers', 'runs/s', 'submit → first step p50 (ms)', 'p99 (ms)'], rows),
    kill,
  ]
    .filter(Boolean)
    .join('\n\n');
}

interface W4File {
  date: string;
  node?: string;
  machine: { node?: string; commit?: string };
  loadAverage: number[];
  versions: Record<string, string>;
  lunationFrom?: 'dist' | 'source';
  results: Array<{
    name: string;
    api: string;
    status: string;
    timing?: { perRunUs: { median: number }; cpuPerRunUs: { median: number } };
  }>;
}

/**
 * W4 comes from its own command (`bench:w4`, one file per Node version): the latest files are shown here with
 * what they ran on, so the report and the files never disagree.
 */
function w4Section(): string {
  const files: Array<W4File & { major: number }> = [];
  for (const major of [20, 24]) {
    try {
      const file = JSON.parse(readFileSync(join(benchDir, `results/w4-node${major}.json`), 'utf8')) as W4File;
      files.push({ ...file, major });
    } catch {
      // not run on this Node version
    }
  }
  const intro = [
    '## W4: one agent step through the vendor SDK',
    '',
    'One agent step over loopback HTTP: a user message in, one recorded 26-token Chat Completions stream out, for',
    'the `openai` SDK alone, Lunation (`OpenAIModel`, `runtime.run()` with every event consumed), the AI SDK',
    '(`@ai-sdk/openai`, `streamText`) and OpenAI Agents JS (`OpenAIChatCompletionsModel`). The server runs in its',
    'own process, each framework in a fresh one. From `pnpm --filter @lunation/bench run bench:w4`',
    '(`bench/results/w4-node<major>.json`), not from the runs above.',
  ].join('\n');
  if (files.length === 0) return `${intro}\n\nNo W4 results yet.`;
  const sections = files.map((file) => {
    const sdk = file.results.find((result) => result.name.startsWith('openai SDK'))?.timing;
    const rows = file.results.map((result) => {
      if (result.status !== 'ok' || !result.timing) return [result.name, result.api, result.status, ''];
      const { perRunUs, cpuPerRunUs } = result.timing;
      const over =
        sdk && result.timing !== sdk ? ` (+${number(cpuPerRunUs.median - sdk.cpuPerRunUs.median, 0)})` : '';
      return [result.name, result.api, number(perRunUs.median, 0), `${number(cpuPerRunUs.median, 0)}${over}`];
    });
    const versions = Object.entries(file.versions)
      .map(([name, version]) => `\`${name}\` ${version}`)
      .join(', ');
    const when = `${file.date.slice(0, 10)}${file.machine.commit ? `, commit ${file.machine.commit}` : ''}`;
    const load = file.loadAverage.map((value) => value.toFixed(1)).join(' / ');
    const from =
      file.lunationFrom === 'dist' ? 'Lunation from its built `dist/`' : 'Lunation from TypeScript source';
    return [
      `**Node ${(file.node ?? file.machine.node ?? String(file.major)).replace(/^v/, '')}** (${when}; load average ${load} on 2 cores; ${from}). Versions: ${versions}.`,
      '',
      table(['framework', 'API', 'µs/step (wall, median)', 'µs/step CPU (more than the SDK alone)'], rows),
    ].join('\n');
  });
  return [intro, ...sections].join('\n\n');
}

/** bench/profile-notes.md: what the profiles show where a target is missed, kept by hand beside the figures. */
function profileNotes(): string {
  try {
    return readFileSync(join(benchDir, 'profile-notes.md'), 'utf8').trim();
  } catch {
    return '';
  }
}

interface Bar {
  label: string;
  value: number;
  kind: 'lunation' | 'bare' | 'peer';
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A horizontal bar chart, log scale, of W1 µs per step, non-streaming then streaming. */
export function renderW1Svg(input: BenchResults): string {
  const bench = normalize(input);
  const rows: Array<Bar | { heading: string }> = [];
  for (const run of bench.runs)
    for (const mode of ['generate', 'stream'] as const) {
      rows.push({
        heading: `${nodeLabel(run)}: ${mode === 'generate' ? 'non-streaming (await the result)' : 'streaming (every event consumed)'}`,
      });
      for (const result of w1Results(run).filter((entry) => entry.mode === mode && entry.status === 'ok')) {
        const value = perStep(result);
        if (value === undefined) continue;
        const framework = FRAMEWORKS[result.framework];
        const store = result.store === 'none' ? '' : ` + ${storeLabel(result.framework, result.store)}`;
        rows.push({
          label: `${framework.name}, ${framework.api[mode]}${store}${result.traced ? ', every run traced' : ''}`,
          value,
          kind: result.framework === 'lunation' ? 'lunation' : result.framework === 'bare' ? 'bare' : 'peer',
        });
      }
    }
  const bars = rows.filter((row): row is Bar => 'value' in row);
  const width = 1030;
  const labelWidth = 490;
  const chartWidth = 420;
  const rowHeight = 24;
  const top = 60;
  const chartBottom = top + rows.length * rowHeight;
  const height = chartBottom + 56;
  const values = bars.map((bar) => bar.value);
  const lowExp = Math.floor(Math.log10(Math.max(0.01, Math.min(1, ...values))));
  const highExp = Math.ceil(Math.log10(Math.max(10, ...values)));
  const x = (value: number) =>
    labelWidth + ((Math.log10(Math.max(value, 10 ** lowExp)) - lowExp) / (highExp - lowExp)) * chartWidth;
  const colors = { lunation: '#4f46e5', bare: '#9ca3af', peer: '#f59e0b' };
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="16" y="24" font-size="15" font-weight="600" fill="#111827">W1 tool loop: framework µs per step (median run at S=10 ÷ 10), log scale — lower is better</text>`,
    `<text x="16" y="42" fill="#6b7280">${escapeXml(`${bench.machine.cpu}, ${bench.machine.cores} cores, ${bench.runs.map((run) => nodeLabel(run)).join(' and ')}, ${bench.date.slice(0, 10)}; the scripted model answers at once`)}</text>`,
  ];
  for (let exp = lowExp; exp <= highExp; exp++) {
    const gx = x(10 ** exp).toFixed(1);
    parts.push(
      `<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${chartBottom}" stroke="#e5e7eb"/>`,
      `<text x="${gx}" y="${chartBottom + 16}" text-anchor="middle" fill="#6b7280">${escapeXml(number(10 ** exp, exp < 0 ? -exp : 0))} µs</text>`,
    );
  }
  rows.forEach((row, index) => {
    const y = top + index * rowHeight;
    if (!('value' in row)) {
      parts.push(
        `<text x="16" y="${y + 16}" font-weight="600" fill="#374151">${escapeXml(row.heading)}</text>`,
      );
      return;
    }
    const end = x(row.value);
    parts.push(
      `<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end" fill="#111827">${escapeXml(row.label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 4}" width="${Math.max(1, end - labelWidth).toFixed(1)}" height="${rowHeight - 8}" rx="2" fill="${colors[row.kind]}"/>`,
      `<text x="${(end + 6).toFixed(1)}" y="${y + 16}" fill="#111827">${escapeXml(number(row.value))} µs</text>`,
    );
  });
  const legendY = height - 12;
  let legendX = labelWidth;
  for (const [kind, name] of [
    ['lunation', 'Lunation'],
    ['bare', 'bare loop (the floor)'],
    ['peer', 'peers'],
  ] as const) {
    parts.push(
      `<rect x="${legendX}" y="${legendY - 10}" width="12" height="12" fill="${colors[kind]}"/>`,
      `<text x="${legendX + 16}" y="${legendY}" fill="#374151">${name}</text>`,
    );
    legendX += kind === 'bare' ? 160 : 100;
  }
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
