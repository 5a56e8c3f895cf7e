import type { JsonValue, RunIdentity } from '@lunation/contract';
import { z } from 'zod';
import { defineStateKey } from './state.js';

export const taskStatusSchema = z.enum(['running', 'completed', 'failed', 'cancelled']);
/** Where a background task is: running, completed, failed or cancelled. */
export type TaskStatus = z.infer<typeof taskStatusSchema>;

/** A background task as kept in thread state (persisted with the thread). */
export interface TaskRecord {
  id: string;
  name: string;
  status: TaskStatus;
  /** The runtime process that runs it. */
  owner: string;
  /** The run whose tool started it. */
  runId: string;
  startedAt: number;
  finishedAt?: number;
  result?: JsonValue;
  error?: string;
}

export const taskRecordSchema: z.ZodType<TaskRecord> = z.object({
  id: z.string(),
  name: z.string(),
  status: taskStatusSchema,
  owner: z.string(),
  runId: z.string(),
  startedAt: z.number(),
  finishedAt: z.number().optional(),
  result: z.any().optional(),
  error: z.string().optional(),
});

/** The thread's background tasks by id. */
export const tasksKey = defineStateKey<Record<string, TaskRecord>, TaskRecord>({
  name: 'runtime.tasks',
  schema: z.record(z.string(), taskRecordSchema),
  initial: () => ({}),
  scope: 'thread',
  apply: (value, task) => ({ ...value, [task.id]: task }),
});

/** What tools use to start work that outlives their call. */
export interface BackgroundTasks {
  /** Starts `work` now and returns its task id at once; its result reaches the run at the next step. */
  spawn(name: string, work: (signal: AbortSignal) => Promise<unknown>): string;
  /** Starts a run of another agent on a child thread in the background; its final answer is the result. */
  spawnAgent(agentId: string, task: string): string;
}

/** Where the runtime keeps live tasks (one per process). */
export interface TaskHost {
  readonly owner: string;
  /** Starts `work` for the run with `identity`. */
  spawn(identity: RunIdentity, name: string, work: (signal: AbortSignal) => Promise<unknown>): TaskRecord;
  /** Starts a run of another agent for the run with `identity`. */
  spawnAgent(identity: RunIdentity, agentId: string, task: string): TaskRecord;
  /** True while this process runs the task. */
  isLive(taskId: string): boolean;
  /** Aborts the task's signal; false when this process does not run it. */
  cancel(taskId: string): boolean;
}

/** The message the model gets when a task finished. */
export function taskMessageText(task: TaskRecord): string {
  const head = `[background task "${task.name}" (${task.id}) ${task.status}]`;
  if (task.status === 'completed')
    return `${head}\n${typeof task.result === 'string' ? task.result : JSON.stringify(task.result ?? null)}`;
  return `${head}${task.error ? `: ${task.error}` : ''}`;
}
