/**
 * A worker process of the fleet specs: it opens the dispatcher under test from the module the kit was given,
 * reaches the test's store over its IPC channel, and runs an `AgentWorker` whose `wait` tool tells the test it
 * started and then waits until the test kills the process.
 */
import type { Dispatcher, DispatchPolicy } from '@lunation/contract';
import { AgentWorker } from '@lunation/fleet';
import { fleetRuntime } from './fleet-agent.js';
import { RemoteStore } from './remote-store.js';

/** What the test sends a worker process first. */
export interface WorkerProcessStart {
  kind: 'start';
  /** The file URL of the module that exports `openDispatcher`. */
  module: string;
  /** What names the backend, as `workerProcess.backend` gave it. */
  backend: unknown;
  policy: DispatchPolicy;
  workerId: string;
  claimLockMs: number;
}

/** What a worker process tells the test. */
export type WorkerProcessMessage =
  | { kind: 'ready'; pid: number }
  | { kind: 'tool-started'; idempotencyKey: string }
  | { kind: 'failed'; message: string };

function tell(message: WorkerProcessMessage): void {
  process.send?.(message);
}

process.once('message', async (message: WorkerProcessStart) => {
  try {
    const loaded = (await import(message.module)) as {
      openDispatcher?: (backend: unknown, policy: DispatchPolicy) => Promise<Dispatcher>;
    };
    if (typeof loaded.openDispatcher !== 'function') {
      throw new Error(`${message.module} does not export openDispatcher(backend, policy)`);
    }
    const dispatcher = await loaded.openDispatcher(message.backend, message.policy);
    const runtime = fleetRuntime(new RemoteStore(), {
      wait: (idempotencyKey) => {
        tell({ kind: 'tool-started', idempotencyKey });
        return new Promise<string>(() => {});
      },
    });
    new AgentWorker({
      runtime,
      dispatcher,
      workerId: message.workerId,
      claimLockMs: message.claimLockMs,
      idleWaitMs: 100,
      strandedScanIntervalMs: 0,
    }).start();
    tell({ kind: 'ready', pid: process.pid });
  } catch (error) {
    tell({
      kind: 'failed',
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
  }
});
