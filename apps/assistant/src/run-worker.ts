import type { Dispatcher } from '@lunation/contract';
import { type AgentRuntime, AgentWorker } from '@lunation/runtime';
import { nextSignal } from './run-server.js';

export interface WorkerOptions {
  runtime: AgentRuntime;
  dispatcher: Dispatcher;
  workerId: string;
  concurrency: number;
  banner: string;
  log: (line: string) => void;
}

/** Runs the fleet's agent until SIGTERM or SIGINT, then stops claiming and finishes what it holds (up to 30 s). */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const worker = new AgentWorker({
    runtime: options.runtime,
    dispatcher: options.dispatcher,
    workerId: options.workerId,
    concurrency: options.concurrency,
    onRejected: (entry, error) =>
      options.log(`  dropped submission ${entry.id} of thread ${entry.threadId}: ${error.message}`),
    onError: (error) => options.log(`  worker error: ${(error as Error)?.message ?? String(error)}`),
  }).start();
  options.log(`Lunation assistant worker ${options.workerId} ready (${options.concurrency} threads at once)`);
  options.log(`  ${options.banner}`);
  const signal = await nextSignal(['SIGTERM', 'SIGINT']);
  options.log(`${signal}: finishing the threads in hand and stopping…`);
  const left = await worker.stop({ deadlineMs: 30_000 });
  if (left.length > 0) options.log(`  left to the fleet: ${left.join(', ')}`);
}
