import type { FrameworkId } from './frameworks/index.js';
import type { Mode, StoreKind } from './harness.js';
import type { MemorySample, Stats, Timing } from './measure.js';

export type Task =
  | { kind: 'w1'; framework: FrameworkId; mode: Mode; store: StoreKind }
  | { kind: 'w1-redis-round-trips' }
  | { kind: 'w2'; framework: FrameworkId; mode: Mode }
  | { kind: 'w3'; store: 'sqlite' | 'redis' };

export function taskId(task: Task): string {
  switch (task.kind) {
    case 'w1':
      return `w1:${task.framework}:${task.mode}:${task.store}`;
    case 'w1-redis-round-trips':
      return 'w1:lunation:redis-round-trips';
    case 'w2':
      return `w2:${task.framework}:${task.mode}`;
    case 'w3':
      return `w3:lunation:${task.store}`;
  }
}

interface Outcome {
  id: string;
  /** `unavailable`: cannot run here (reason given); `failed`: a check or the framework threw. */
  status: 'ok' | 'unavailable' | 'failed';
  reason?: string;
  /** Wall time of the task, seconds. */
  seconds: number;
  /** Cores kept busy by other processes during the task, on average (Linux; includes Redis). */
  otherLoad?: number;
}

export interface W1Result extends Outcome {
  kind: 'w1';
  framework: FrameworkId;
  mode: Mode;
  store: StoreKind;
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

export interface W2Result extends Outcome {
  kind: 'w2';
  framework: FrameworkId;
  mode: Mode;
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
  store: 'sqlite' | 'redis';
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

export type TaskResult = W1Result | W1RoundTripResult | W2Result | W3Result;

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
