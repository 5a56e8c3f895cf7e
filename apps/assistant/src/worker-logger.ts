import type { Instrumentation, RunInstrumentation } from '@lunation/contract';
import type { WorkerLogEntry } from '@lunation/fleet';
import { type DestinationStream, pino } from 'pino';

/** This process's runtime as the run timeline names it: its lease owner and incarnation. */
interface RuntimeIdentity {
  owner?: string;
  incarnation?: string;
}

/** A worker's structured log: one JSON line per fact, through pino. */
export interface WorkerLogger {
  /** Logs one of the worker's entries (`AgentWorkerOptions.log`); a recovered run also gets a `run-takeover` line. */
  entry(entry: WorkerLogEntry): void;
  /** Logs each tool call that runs again after its worker died (`tool-rerun`), for the runtime's instrumentation. */
  readonly instrumentation: Instrumentation;
}

/** What {@link createWorkerLogger} takes. */
export interface WorkerLoggerOptions {
  /** The worker's id in claims. */
  workerId: string;
  /** Where the lines go. @default standard output, written synchronously (a killed worker loses no line) */
  destination?: DestinationStream;
}

/**
 * The worker's logger: pino, with the process id and host name on every line, the level as a word, the time as
 * ISO 8601 and the sentence under `message`. Lines for run starts, takeovers, tool re-runs, dead letters and run
 * ends carry the thread, the run, the lease token, and the runtime's lease owner and incarnation — what the run
 * timeline shows.
 */
export function createWorkerLogger(options: WorkerLoggerOptions): WorkerLogger {
  const logger = pino(
    {
      level: 'info',
      messageKey: 'message',
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination ?? pino.destination({ dest: 1, sync: true }),
  ).child({ workerId: options.workerId });
  // The owner and incarnation are the runtime's (one per process): every worker entry carries them.
  let runtime: RuntimeIdentity = {};

  const rerunObserver = (
    runId: string,
    threadId: string,
    leaseToken: number | undefined,
  ): RunInstrumentation => ({
    modelCallStarted: () => undefined,
    toolCallStarted(call) {
      if (call.rerun) {
        logger.warn(
          {
            event: 'tool-rerun',
            threadId,
            runId,
            toolName: call.toolName,
            toolCallId: call.toolCallId,
            idempotencyKey: call.idempotencyKey,
            attempt: call.attempt,
            ...(leaseToken === undefined ? {} : { leaseToken }),
            ...runtime,
          },
          `tool ${call.toolName} of run ${runId} runs again (attempt ${call.attempt}): its earlier attempt died mid-way`,
        );
      }
      return undefined;
    },
    checkpointStarted: () => undefined,
    ledgerHit: () => {},
    toolCallSuspended: () => {},
    toolCallResumed: () => {},
    lease: () => {},
    suspendContext: () => undefined,
    runEnded: () => {},
  });

  return {
    entry(entry) {
      const { level, message, ...fields } = entry;
      if (entry.owner !== undefined && entry.incarnation !== undefined) {
        runtime = { owner: entry.owner, incarnation: entry.incarnation };
      }
      if (level === 'debug') return;
      logger[level](fields, message);
      if (entry.event === 'run-started' && entry.how === 'recovered') {
        const { how: _, waitedMs: __, ...identity } = fields;
        logger.warn(
          { ...identity, event: 'run-takeover' },
          `took run ${entry.runId} of thread ${entry.threadId} over from a worker that stopped (lease token ${entry.leaseToken})`,
        );
      }
    },
    instrumentation: {
      runStarted: (fact) => rerunObserver(fact.identity.runId, fact.identity.threadId, fact.lease?.token),
    },
  };
}
