import { LunationError } from '@lunation/contract';
import { z } from 'zod';
import { type TaskHost, tasksKey } from '../background-tasks.js';
import { definePlugin } from '../plugin.js';
import { defineTool } from '../tool.js';

/** Offers `list_tasks` and `cancel_task` to the model. Agents that start background work should use it. */
export function backgroundTasksPlugin(host: () => TaskHost) {
  return definePlugin({
    name: 'background-tasks',
    register(registrar) {
      registrar.stateKey(tasksKey);
      registrar.tool(
        defineTool({
          name: 'list_tasks',
          description: 'Lists the background tasks of this conversation with their status and results',
          input: z.object({}),
          execute: (_, context) =>
            Object.values(context.state.get(tasksKey)).map((task) => ({
              id: task.id,
              name: task.name,
              status: task.status,
              ...(task.error ? { error: task.error } : {}),
            })),
        }),
      );
      registrar.tool(
        defineTool({
          name: 'cancel_task',
          description: 'Cancels a running background task',
          input: z.object({ taskId: z.string() }),
          execute: ({ taskId }, context) => {
            const task = context.state.get(tasksKey)[taskId];
            if (!task) throw new LunationError('not-found', `No background task "${taskId}"`);
            if (task.status !== 'running') return `Task ${taskId} already ${task.status}.`;
            if (!host().cancel(taskId))
              throw new LunationError('not-found', `Task ${taskId} is not running in this process`);
            return `Cancelling task ${taskId}.`;
          },
        }),
      );
    },
  });
}
