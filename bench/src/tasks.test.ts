import { describe, expect, it } from 'vitest';
import { taskId } from './results.js';
import { allTasks } from './run-task.js';
import { spansPerRun } from './tracing/sdk-tracing.js';

describe('the traced W1 tasks', () => {
  it('are in the run only when asked for (the workspace run), for no store and SQLite', () => {
    const traced = allTasks(['lunation'], { traced: true }).map(taskId);
    expect(traced.filter((id) => id.endsWith(':traced'))).toEqual([
      'w1:lunation:generate:none:traced',
      'w1:lunation:generate:sqlite:traced',
    ]);
    // Every untraced task is still there, under the same id.
    expect(traced.filter((id) => !id.endsWith(':traced'))).toEqual(allTasks(['lunation']).map(taskId));
    expect(
      allTasks(['lunation'])
        .map(taskId)
        .filter((id) => id.includes('traced')),
    ).toEqual([]);
    expect(
      allTasks(['bare'], { traced: true })
        .map(taskId)
        .filter((id) => id.includes('traced')),
    ).toEqual([]);
  });

  it('expect the spans of a W1 run: invoke_agent, a chat per step, an execute_tool per tool step', () => {
    expect(spansPerRun(1)).toBe(2);
    expect(spansPerRun(10)).toBe(20);
  });
});
