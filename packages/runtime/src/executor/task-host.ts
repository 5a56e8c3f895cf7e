import { type JsonValue, LunationError, type RunIdentity } from '@lunation/contract';
import type { TaskHost, TaskRecord } from '../background-tasks.js';
import type { LiveRuns } from './live-runs.js';
import type { RunHandle, RunOptions } from './run-options.js';
import type { Seams } from './seams.js';

/** A background task this process runs. */
interface LiveTask {
  threadId: string;
  controller: AbortController;
  record: TaskRecord;
}

/**
 * This process's background tasks: runs them, hands each result to its thread's live run, or keeps it for the
 * thread's next run and starts one once no task of the thread is left.
 */
export class LocalTaskHost implements TaskHost {
  private readonly live = new Map<string, LiveTask>();
  /** Finished task results waiting for a run of their thread. */
  private readonly finished = new Map<string, TaskRecord[]>();

  constructor(
    readonly owner: string,
    private readonly runs: LiveRuns,
    /** Starts a run (a child agent's, or a thread's continuation). */
    private readonly start: (options: RunOptions) => Promise<RunHandle>,
    private readonly seams: Seams,
  ) {}

  spawn(identity: RunIdentity, name: string, work: (signal: AbortSignal) => Promise<unknown>): TaskRecord {
    const controller = new AbortController();
    const { clock, ids } = this.seams;
    const record: TaskRecord = {
      id: ids.id(),
      name,
      status: 'running',
      owner: this.owner,
      runId: identity.runId,
      startedAt: clock.now(),
    };
    this.live.set(record.id, { threadId: identity.threadId, controller, record });
    Promise.resolve()
      .then(() => work(controller.signal))
      .then(
        (value): TaskRecord => ({
          ...record,
          status: 'completed',
          finishedAt: clock.now(),
          ...(value === undefined ? {} : { result: JSON.parse(JSON.stringify(value)) as JsonValue }),
        }),
        (error): TaskRecord => ({
          ...record,
          status: controller.signal.aborted ? 'cancelled' : 'failed',
          finishedAt: clock.now(),
          error: controller.signal.aborted
            ? 'cancelled'
            : error instanceof Error
              ? error.message
              : String(error),
        }),
      )
      .then((finished) => {
        this.live.delete(record.id);
        this.taskFinished(identity.threadId, finished);
      });
    return record;
  }

  spawnAgent(identity: RunIdentity, agentId: string, task: string): TaskRecord {
    return this.spawn(identity, `agent:${agentId}`, async (signal) => {
      const child = await this.start({
        threadId: `${identity.threadId}~task~${agentId}~${this.seams.ids.id()}`,
        agentId,
        input: task,
        signal,
        stream: false,
        parent: { runId: identity.runId, toolCallId: 'background', origin: 'subagent' },
      });
      const result = await child.result;
      if (result.termination.type !== 'natural-end') {
        throw new LunationError(
          'tool-execution-failed',
          `Agent "${agentId}" ended ${result.termination.type}`,
        );
      }
      return result.finalText;
    });
  }

  isLive(taskId: string): boolean {
    return this.live.has(taskId);
  }

  cancel(taskId: string): boolean {
    const live = this.live.get(taskId);
    if (!live) return false;
    live.controller.abort('cancelled');
    return true;
  }

  /** The finished results kept for the thread's next run (left in place until {@link taken}). */
  waiting(threadId: string): TaskRecord[] | undefined {
    return this.finished.get(threadId);
  }

  /** A run of the thread has the waiting results now. */
  taken(threadId: string): void {
    this.finished.delete(threadId);
  }

  /** Routes a finished task to its thread's active run, or starts a continuation run once none is left. */
  private taskFinished(threadId: string, task: TaskRecord): void {
    const active = this.runs.byThread.get(threadId);
    if (active?.loop) {
      active.loop.deliverTask(task);
      return;
    }
    const waiting = this.finished.get(threadId) ?? [];
    waiting.push(task);
    this.finished.set(threadId, waiting);
    if (active) return; // a run is starting; it picks the results up
    const stillRunning = [...this.live.values()].some((live) => live.threadId === threadId);
    if (stillRunning) return;
    // If the thread is busy elsewhere, the results stay queued here for the next run of the thread.
    this.start({ threadId, stream: false }).catch(() => {});
  }
}
