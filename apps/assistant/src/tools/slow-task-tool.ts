import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from '@lunation/runtime';
import { z } from 'zod';

export interface SlowTaskToolOptions {
  /** How long each step takes. @default 600 */
  stepMs?: number;
}

/** A slow job that reports progress after each step (`tool-progress` events); cancelling the run stops it. */
export function createSlowTaskTool(options: SlowTaskToolOptions = {}) {
  const stepMs = options.stepMs ?? 600;
  return defineTool({
    name: 'slow_task',
    description:
      'Runs a slow job (it simulates a build) and reports progress while it runs. Use it when the user ' +
      'asks for a slow or long-running task.',
    input: z.object({
      steps: z.number().int().min(1).max(20).default(5).describe('How many steps the job has'),
    }),
    execute: async ({ steps }, context) => {
      for (let done = 1; done <= steps; done++) {
        await sleep(stepMs, undefined, { signal: context.signal });
        context.reportProgress({ done, total: steps, message: `step ${done} of ${steps}` });
      }
      return { steps, message: `All ${steps} steps finished.` };
    },
  });
}
