import type { Dispatcher } from '@lunation/contract';
import { AgentWorker, type WorkerLogEntry } from '@lunation/fleet';
import type { AgentRuntime } from '@lunation/runtime';
import { nextSignal } from './run-server.js';
import type { WorkerLogger } from './worker-logger.js';

export interface WorkerOptions {
  runtime: AgentRuntime;
  dispatcher: Dispatcher;
  workerId: string;
  concurrency: number;
  banner: string;
  log: (line: string) => void;
  /** The worker's structured log (pino JSON lines). */
  logger: WorkerLogger;
  /** Also given each of the worker's log entries (the metrics). */
  workerLog?: (entry: WorkerLogEntry) => void;
}

/**
 * Runs the fleet's agent until SIGTERM or SIGINT, then stops claiming and finishes what it holds (up to 30 s).
 * What it runs is logged as one pino JSON line per fact (claims, runs started, taken over and ended, tool re-runs,
 * leases lost, dead letters), with the process id, the run, lease token, owner and incarnation the run's timeline
 * shows.
 */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const worker = new AgentWorker({
    runtime: options.runtime,
    dispatcher: options.dispatcher,
    workerId: options.workerId,
    concurrency: options.concurrency,
    onRejected: (entry, error) =>
      options.log(`  dropped submission ${entry.id} of thread ${entry.threadId}: ${error.message}`),
    onError: (error) => options.log(`  worker error: ${(error as Error)?.message ?? String(error)}`),
    log: (entry) => {
      options.logger.entry(entry);
      options.workerLog?.(entry);
    },
  }).start();
  options.log(`Lunation assistant worker ${options.workerId} ready (${options.concurrency} threads at once)`);
  options.log(`  ${options.banner}`);
  const signal = await nextSignal(['SIGTERM', 'SIGINT']);
  options.log(`${signal}: finishing the threads in hand and stopping…`);
  const left = await worker.stop({ deadlineMs: 30_000 });
  if (left.length > 0) options.log(`  left to the fleet: ${left.join(', ')}`);
}
