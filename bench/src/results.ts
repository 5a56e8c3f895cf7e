import type { FrameworkId } from './frameworks/index.js';
import type { Mode, StoreKind } from './harness.js';
import type { MemorySample, Stats, Timing } from './measure.js';
import type { PostgresStoreKind } from './postgres.js';

export type Task =
  | {
      kind: 'w1';
      framework: FrameworkId;
      mode: Mode;
      store: StoreKind;
      /** Lunation only: every run traced by `@lunation/otel` on a real SDK tracer (src/tracing/sdk-tracing.ts). */
      traced?: boolean;
    }
  | { kind: 'w1-redis-round-trips' }
  | { kind: 'w1-postgres-round-trips' }
  | { kind: 'w2'; framework: FrameworkId; mode: Mode; store?: StoreKind }
  | { kind: 'w3'; store: W3Store };

export type W3Store = 'sqlite' | 'redis' | PostgresStoreKind;

export function taskId(task: Task): string {
  switch (task.kind) {
    case 'w1':
      return `w1:${task.framework}:${task.mode}:${task.store}${task.traced ? ':traced' : ''}`;
    case 'w1-redis-round-trips':
      return 'w1:lunation:redis-round-trips';
    case 'w1-postgres-round-trips':
      return 'w1:lunation:postgres-round-trips';
    case 'w2':
      return `w2:${task.framework}:${task.mode}${task.store && task.store !== 'none' ? `:${task.store}` : ''}`;
    case 'w3':
      return `w3:lunation:${task.store}`;
  }
}

export interface Outcome {
  id: string;
  /** `unavailable`: cannot run here (reason given); `failed`: a check or the framework threw. */
  status: 'ok' | 'unavailable' | 'failed';
  reason?: string;
  /** Wall time of the task, seconds. */
  seconds: number;
  /** Cores kept busy by other processes during the task, on average (Linux; includes Redis and PostgreSQL). */
  otherLoad?: number;
  /** Set when the result comes from a later partial run merged in (`pnpm bench --merge`). */
  measured?: { date: string; commit: string; lunationFrom: LoadedFrom };
}

export interface W1Result extends Outcome {
  kind: 'w1';
  framework: FrameworkId;
  mode: Mode;
  store: StoreKind;
  /** Every run traced (OpenTelemetry, `@lunation/otel` on a real SDK tracer; see src/tracing/sdk-tracing.ts). */
  traced?: boolean;
  /** By step count. */
  timings: Record<string, Timing>;
  /** Heap still used after the last run and a full GC, per run made: what the framework keeps per finished run. */
  retainedBytesPerRun?: number;
}

export interface RoundTripCount {
  steps: number;
  runs: number;
  roundTripsPerRun: number;
  commandsPerRun: number;
  /** Commands per run, by command. */
  commands: Record<string, number>;
}

export interface W1RoundTripResult extends Outcome {
  kind: 'w1-redis-round-trips';
  counts: RoundTripCount[];
}

/** Round trips of one PostgresStore variant's W1 runs, counted on the wire. */
export interface PostgresRoundTripCount {
  /** Which `synchronous_commit` setting the store's connections had. */
  store: PostgresStoreKind;
  steps: number;
  runs: number;
  roundTripsPerRun: number;
  /** Protocol messages the client sent per run, by type. */
  messagesPerRun: Record<string, number>;
  /** Store calls per run and the round trips each took, by method. */
  calls: Record<string, { perRun: number; roundTripsPerCall: number }>;
  /** Calls that overlapped another (0 in a sequential run). */
  overlappedCalls: number;
}

/** What the server itself takes, medians in µs: a `SELECT 1` round trip and a one-row insert's commit. */
export interface PostgresFloor {
  selectUs: number;
  commitUs: number;
  commitAsyncUs: number;
}

export interface W1PostgresRoundTripResult extends Outcome {
  kind: 'w1-postgres-round-trips';
  server?: { version: string; synchronousCommit: string };
  floor?: PostgresFloor;
  counts: PostgresRoundTripCount[];
}

export interface W2Result extends Outcome {
  kind: 'w2';
  framework: FrameworkId;
  mode: Mode;
  /** The store the runs checkpoint to; absent or `none` for no store. */
  store?: StoreKind;
  runs: number;
  steps: number;
  modelDelayMs: number;
  idealMs: number;
  wallMs?: Stats;
  memory?: {
    baseline: MemorySample;
    inFlight: MemorySample;
    rssPerRunBytes: number;
    heapPerRunBytes: number;
  };
}

export interface W3Result extends Outcome {
  kind: 'w3';
  store: W3Store;
  threads: number;
  concurrency: number;
  suspend?: { seconds: number; perSecond: number };
  resume?: { seconds: number; perSecond: number };
  memory?: {
    baseline: MemorySample;
    /** After every thread is suspended, runtime and store still open, after GC. */
    suspended: MemorySample;
    /** Peak RSS sampled while resuming. */
    resumePeakRss: number;
    /** After resuming, after GC. */
    resumed: MemorySample;
  };
}

export type TaskResult = W1Result | W1RoundTripResult | W1PostgresRoundTripResult | W2Result | W3Result;

export interface Machine {
  cpu: string;
  cores: number;
  memoryBytes: number;
  platform: string;
  commit: string;
}

/** Where a process loaded Lunation's packages from. */
export type LoadedFrom = 'source' | 'dist' | 'mixed';

/** Which Node and which installed packages a run used: `node20` the workspace, `node24` current releases. */
export type RunId = 'node20' | 'node24';

/** What a child process reports about itself before it runs anything. */
export interface RunInfo {
  node: string;
  versions: Record<string, string>;
  lunationFrom: LoadedFrom;
  /** The file each Lunation package resolves to. */
  lunationFiles: Record<string, string>;
}

/** Every task of one Node version with one set of installed frameworks. */
export interface BenchRun extends RunInfo {
  id: RunId;
  /** What the run is, e.g. "Node 24, current releases". */
  title: string;
  results: TaskResult[];
}

export interface BenchResults {
  date: string;
  smoke: boolean;
  machine: Machine;
  config: unknown;
  runs: BenchRun[];
}
