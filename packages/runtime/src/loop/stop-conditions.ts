import type { TerminationReason } from '@lunation/contract';
import type { StepStats, StopCondition } from '../agent.js';
import type { ModelResponse } from '../plugin.js';
import type { RunScope } from './run-scope.js';

/** Whether a stop condition (or the round limit) ends the run after the step just kept (`response` its answer). */
export function evaluateStopConditions(
  scope: RunScope,
  response: ModelResponse,
): TerminationReason | undefined {
  const { agent, progress } = scope;
  if (agent.maxRounds > 0 && progress.step >= agent.maxRounds) {
    return { type: 'stopped', code: 'max-rounds', detail: `reached ${agent.maxRounds} rounds` };
  }
  const conditions = agent.definition.stopConditions;
  if (!conditions || conditions.length === 0) return undefined;
  const stats: StepStats = {
    step: progress.step,
    usage: progress.usage,
    elapsedMs: scope.clock.now() - progress.startedAt,
    consecutiveToolErrors: progress.consecutiveToolErrors,
    toolsCalled: response.toolCalls.map((call) => call.toolName),
  };
  for (const condition of conditions) {
    switch (condition.type) {
      case 'token-budget': {
        const used = stats.usage.inputTokens + stats.usage.outputTokens;
        if (used >= condition.maxTokens) {
          return {
            type: 'stopped',
            code: 'token-budget',
            detail: `used ${used} of ${condition.maxTokens} tokens`,
          };
        }
        break;
      }
      case 'timeout':
        if (stats.elapsedMs >= condition.ms) return timedOut(stats.elapsedMs);
        break;
      case 'consecutive-tool-errors':
        if (stats.consecutiveToolErrors >= condition.max) {
          return {
            type: 'stopped',
            code: 'consecutive-tool-errors',
            detail: `${stats.consecutiveToolErrors} tool errors in a row`,
          };
        }
        break;
      case 'tool-called':
        if (stats.toolsCalled.includes(condition.toolName)) {
          return { type: 'stopped', code: 'tool-called', detail: `called ${condition.toolName}` };
        }
        break;
      case 'custom':
        if (condition.check(stats)) return { type: 'stopped', code: condition.code };
        break;
    }
  }
  return undefined;
}

export function timedOut(elapsedMs: number): TerminationReason {
  return { type: 'stopped', code: 'timeout', detail: `ran ${elapsedMs} ms` };
}

/** The run's `timeout` stop condition, if any, in milliseconds. */
export function runTimeoutMs(conditions: readonly StopCondition[] | undefined): number | undefined {
  if (conditions === undefined) return undefined;
  let limit: number | undefined;
  for (const condition of conditions) {
    if (condition.type === 'timeout') limit = Math.min(limit ?? condition.ms, condition.ms);
  }
  return limit;
}
