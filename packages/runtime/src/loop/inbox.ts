import type { Message } from '@lunation/contract';
import { type TaskRecord, taskMessageText, tasksKey } from '../background-tasks.js';
import type { RunScope } from './run-scope.js';

/** How follow-up input joins a live run. */
export type DeliveryMode = 'queue' | 'steer' | 'interrupt';

type InboxItem =
  | { kind: 'messages'; messages: Message[]; mode: DeliveryMode }
  | { kind: 'task'; task: TaskRecord };

/**
 * Input that reaches a live run between steps: follow-up messages (queued, steering, interrupting) and the
 * results of background tasks. Drained at each step boundary, before the next model call.
 */
export class Inbox {
  private items: InboxItem[] = [];
  private wake: (() => void) | undefined;
  /** A kept-alive run was asked to end once idle. */
  closed = false;

  constructor(private readonly scope: RunScope) {
    const { taskResults } = scope.options;
    if (taskResults) for (const task of taskResults) this.items.push({ kind: 'task', task });
    this.reconcileTasks();
  }

  /** The run was cancelled: stop waiting for input. */
  wakeUp(): void {
    this.wake?.();
  }

  get size(): number {
    return this.items.length;
  }

  deliver(messages: Message[], mode: DeliveryMode): void {
    this.items.push({ kind: 'messages', messages, mode });
    this.wake?.();
  }

  deliverTask(task: TaskRecord): void {
    this.items.push({ kind: 'task', task });
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  /** Moves everything received into the conversation. True when anything arrived. */
  drain(): boolean {
    if (this.items.length === 0) return false;
    const { scope } = this;
    const items = this.items;
    this.items = [];
    for (const item of items) {
      if (item.kind === 'task') {
        if (scope.state.isRegistered(tasksKey)) scope.state.write([{ key: tasksKey, update: item.task }]);
        scope.append({
          id: scope.ids.id(),
          role: 'user',
          content: [{ type: 'text', text: taskMessageText(item.task) }],
          metadata: { taskId: item.task.id, visibility: 'internal', runId: scope.identity.runId },
        });
        continue;
      }
      if (item.mode === 'steer') {
        scope.append({
          id: scope.ids.id(),
          role: 'user',
          content: [
            {
              type: 'text',
              text: '[The user interjected while you were working. Take their new message into account before continuing.]',
            },
          ],
          metadata: { visibility: 'internal', interjection: true },
        });
      }
      for (const message of item.messages) scope.append(message);
    }
    return true;
  }

  /** Whether a background task of this thread is still running. */
  hasPendingTasks(): boolean {
    const { state } = this.scope;
    if (!state.isRegistered(tasksKey)) return false;
    for (const task of Object.values(state.peek(tasksKey))) if (task.status === 'running') return true;
    return false;
  }

  /** Resolves when input arrives, or the run is closed or cancelled. */
  waitForInput(): Promise<void> {
    if (this.items.length > 0 || this.closed || this.scope.signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = () => {
        this.wake = undefined;
        resolve();
      };
    });
  }

  /** Tasks recorded as running that no live process of ours runs any more are reported failed. */
  private reconcileTasks(): void {
    const { state, options } = this.scope;
    if (!state.isRegistered(tasksKey) || !state.written(tasksKey)) return;
    const delivered = new Set((options.taskResults ?? []).map((task) => task.id));
    for (const task of Object.values(state.peek(tasksKey))) {
      if (task.status !== 'running' || delivered.has(task.id) || options.tasks?.isLive(task.id)) continue;
      this.items.push({
        kind: 'task',
        task: {
          ...task,
          status: 'failed',
          finishedAt: this.scope.clock.now(),
          error: `the process running it (${task.owner}) stopped before it finished`,
        },
      });
    }
  }
}
