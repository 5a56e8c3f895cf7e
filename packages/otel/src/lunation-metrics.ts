import { createRequire } from 'node:module';
import type {
  DispatchDepth,
  Instrumentation,
  InstrumentedOperation,
  ModelCallFact,
  ModelCallOutcome,
  RunEndFact,
  RunInstrumentation,
  RunStartFact,
  ToolCallFact,
  ToolCallOutcome,
} from '@lunation/contract';
import { type Attributes, type MeterProvider, metrics } from '@opentelemetry/api';
import { GEN_AI } from './attribute-names.js';
import { errorCode } from './run-tracer.js';

/** The name (instrumentation scope) of the meter `@lunation/otel` records its metrics with. */
export const METER_NAME = '@lunation/otel';

const METER_VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

/** Every metric name `LunationMetrics` records. */
export const METRICS = {
  /** GenAI conventions: a model call's duration, in seconds (histogram). */
  operationDuration: 'gen_ai.client.operation.duration',
  /** GenAI conventions: tokens a model call used, by `gen_ai.token.type` (histogram). */
  tokenUsage: 'gen_ai.client.token.usage',
  /** Runs going on in this process now (up-down counter). */
  activeRuns: 'lunation.runs.active',
  /** Runs continued here after the process running them stopped: the thread's lease was taken over (counter). */
  takeovers: 'lunation.lease.takeovers',
  /** Tool calls run again after a crash cut them off, with the same idempotency key (counter). */
  reruns: 'lunation.tool.reruns',
  /** A dispatcher's unacknowledged submissions, per tenant (`lunation.resource.id`) (gauge). */
  queuePending: 'lunation.dispatch.pending',
  /** A dispatcher's threads by state (`lunation.dispatch.state`: waiting, active, delayed, dead_lettered) (gauge). */
  queueThreads: 'lunation.dispatch.threads',
  /** How long a submission waited before a worker claimed its thread, in seconds (histogram). */
  claimLatency: 'lunation.dispatch.claim.duration',
  /** Threads a worker dead-lettered (counter). */
  deadLetters: 'lunation.dispatch.dead_letters',
  /** Failed claims that will be retried (counter). */
  claimFailures: 'lunation.dispatch.claim.failures',
  /** Runs a worker stopped because it lost the thread's lease (counter). */
  leasesLost: 'lunation.lease.lost',
  /** Appends to a run's event log that failed (and are retried) (counter). */
  appendFailures: 'lunation.dispatch.event_append.failures',
} as const;

/** GenAI conventions' advised buckets of `gen_ai.client.operation.duration` (seconds). */
const DURATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/** GenAI conventions' advised buckets of `gen_ai.client.token.usage`. */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];
/** Buckets of the claim latency (seconds): a busy queue waits longer than a model call. */
const CLAIM_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * What `LunationMetrics.workerLog` reads of a worker's log entry (`AgentWorker`'s `log` option hands it
 * `WorkerLogEntry` objects of `@lunation/fleet`, which fit).
 */
export interface WorkerLogFact {
  event: string;
  resourceId?: string;
  /** `run-started` of new input: how long its submission waited to be claimed, in milliseconds. */
  waitedMs?: number;
}

/** Where queue figures come from (a `Dispatcher`'s `depth()`). */
export interface DepthSource {
  /** The queue figures now (a dispatcher's `depth()`), read at each collection. */
  depth(): Promise<DispatchDepth>;
}

/** Options of {@link LunationMetrics}. */
export interface LunationMetricsOptions {
  /** Where the meter comes from. @default the global meter provider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
  /** A dispatcher whose `depth()` is read at each collection for the queue figures. @default none */
  dispatcher?: DepthSource;
}

/**
 * Metrics through the OpenTelemetry metrics API: the GenAI client metrics (`gen_ai.client.operation.duration`,
 * `gen_ai.client.token.usage`) and the runtime's (active runs, lease takeovers, tool re-runs) as an
 * `Instrumentation`; a fleet's (queue depth per tenant, claim latency, dead letters, failed claims, lost leases,
 * failed event appends) from a dispatcher's `depth()` and a worker's log (`workerLog`). See {@link METRICS}.
 */
export class LunationMetrics implements Instrumentation {
  private readonly operationDuration;
  private readonly tokenUsage;
  private readonly activeRuns;
  private readonly takeovers;
  private readonly reruns;
  private readonly claimLatency;
  private readonly deadLetters;
  private readonly claimFailures;
  private readonly leasesLost;
  private readonly appendFailures;

  constructor(options: LunationMetricsOptions = {}) {
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(METER_NAME, METER_VERSION);
    this.operationDuration = meter.createHistogram(METRICS.operationDuration, {
      description: 'GenAI operation duration',
      unit: 's',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    });
    this.tokenUsage = meter.createHistogram(METRICS.tokenUsage, {
      description: 'Measures number of input and output tokens used',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    });
    this.activeRuns = meter.createUpDownCounter(METRICS.activeRuns, {
      description: 'Runs going on in this process',
      unit: '{run}',
    });
    this.takeovers = meter.createCounter(METRICS.takeovers, {
      description: "Runs continued after their process stopped (the thread's lease taken over)",
      unit: '{run}',
    });
    this.reruns = meter.createCounter(METRICS.reruns, {
      description: 'Tool calls run again after a crash cut them off',
      unit: '{call}',
    });
    this.claimLatency = meter.createHistogram(METRICS.claimLatency, {
      description: 'How long a submission waited before a worker claimed its thread',
      unit: 's',
      advice: { explicitBucketBoundaries: CLAIM_BUCKETS },
    });
    this.deadLetters = meter.createCounter(METRICS.deadLetters, {
      description: 'Threads dead-lettered by a worker',
      unit: '{thread}',
    });
    this.claimFailures = meter.createCounter(METRICS.claimFailures, {
      description: 'Failed claims that will be retried',
      unit: '{claim}',
    });
    this.leasesLost = meter.createCounter(METRICS.leasesLost, {
      description: "Runs a worker stopped because it lost the thread's lease",
      unit: '{run}',
    });
    this.appendFailures = meter.createCounter(METRICS.appendFailures, {
      description: "Failed appends to a run's event log (retried)",
      unit: '{append}',
    });
    const { dispatcher } = options;
    if (dispatcher) {
      const pending = meter.createObservableGauge(METRICS.queuePending, {
        description: 'Unacknowledged submissions per tenant',
        unit: '{submission}',
      });
      const threads = meter.createObservableGauge(METRICS.queueThreads, {
        description: 'Threads by state',
        unit: '{thread}',
      });
      meter.addBatchObservableCallback(
        async (result) => {
          let depth: DispatchDepth;
          try {
            depth = await dispatcher.depth();
          } catch {
            return; // no figures this time: the dispatcher did not answer
          }
          result.observe(pending, depth.pending);
          for (const [resourceId, figures] of Object.entries(depth.byResource)) {
            result.observe(pending, figures.pending, { 'lunation.resource.id': resourceId });
          }
          const states = {
            waiting: depth.waiting,
            active: depth.active,
            delayed: depth.delayed,
            dead_lettered: depth.deadLettered,
          };
          for (const [state, value] of Object.entries(states)) {
            result.observe(threads, value, { 'lunation.dispatch.state': state });
          }
        },
        [pending, threads],
      );
    }
  }

  runStarted(fact: RunStartFact): RunInstrumentation {
    const agent = { [GEN_AI.agentId]: fact.identity.agentId };
    this.activeRuns.add(1, agent);
    if (fact.lease?.takeover) this.takeovers.add(1, agent);
    let ended = false;
    return {
      modelCallStarted: (call) => this.modelCall(call),
      toolCallStarted: (call) => this.toolCall(call),
      checkpointStarted: () => undefined,
      ledgerHit: () => {},
      toolCallSuspended: () => {},
      toolCallResumed: () => {},
      lease: () => {},
      suspendContext: () => undefined,
      runEnded: (_fact: RunEndFact) => {
        if (ended) return;
        ended = true;
        this.activeRuns.add(-1, agent);
      },
    };
  }

  /** Reads a worker's log entry (pass it as `AgentWorker`'s `log`, or call it from yours). */
  readonly workerLog = (entry: WorkerLogFact): void => {
    const tenant: Attributes =
      entry.resourceId === undefined ? {} : { 'lunation.resource.id': entry.resourceId };
    switch (entry.event) {
      case 'run-started':
        if (entry.waitedMs !== undefined) this.claimLatency.record(entry.waitedMs / 1_000, tenant);
        break;
      case 'claim-dead-lettered':
        this.deadLetters.add(1, tenant);
        break;
      case 'claim-failed':
        this.claimFailures.add(1, tenant);
        break;
      case 'lease-lost':
        this.leasesLost.add(1, tenant);
        break;
      case 'event-append-failed':
        this.appendFailures.add(1, tenant);
        break;
    }
  };

  private modelCall(call: ModelCallFact): InstrumentedOperation<ModelCallOutcome> {
    const started = performance.now();
    return {
      end: (outcome) => {
        const attributes: Attributes = {
          [GEN_AI.operationName]: 'chat',
          [GEN_AI.providerName]: call.provider,
          [GEN_AI.requestModel]: call.model,
        };
        if (outcome.error !== undefined) {
          attributes[GEN_AI.errorType] = errorCode(outcome.error) ?? errorName(outcome.error);
        }
        this.operationDuration.record((performance.now() - started) / 1_000, attributes);
        const usage = outcome.usage;
        if (usage === undefined) return;
        this.tokenUsage.record(usage.inputTokens, { ...attributes, 'gen_ai.token.type': 'input' });
        this.tokenUsage.record(usage.outputTokens, { ...attributes, 'gen_ai.token.type': 'output' });
      },
    };
  }

  private toolCall(call: ToolCallFact): InstrumentedOperation<ToolCallOutcome> | undefined {
    if (call.rerun) this.reruns.add(1, { [GEN_AI.toolName]: call.toolName });
    return undefined;
  }
}

/** A {@link LunationMetrics}. */
export function lunationMetrics(options: LunationMetricsOptions = {}): LunationMetrics {
  return new LunationMetrics(options);
}

function errorName(error: unknown): string {
  return error instanceof Error && error.name !== '' ? error.name : '_OTHER';
}
