import { LunationError } from '@lunation/contract';
import { RunAbortController, type RunLoopOptions } from './run-scope.js';
import { runTimeoutMs } from './stop-conditions.js';

/**
 * The run's `timeout` stop condition as a signal of the run's own, which also ends a run stuck in a model or
 * tool call: the caller's cancel is forwarded to it, and the deadline aborts it with its own reason.
 */
export class RunDeadline {
  private readonly timer: ReturnType<typeof setTimeout>;

  private constructor(
    private readonly reason: LunationError,
    controller: RunAbortController,
    limit: number,
  ) {
    this.timer = setTimeout(() => controller.abort(reason), limit);
    this.timer.unref?.();
  }

  /** The options a run runs with, and its deadline: `options` as they are when the agent has no timeout. */
  static arm(options: RunLoopOptions): { options: RunLoopOptions; deadline?: RunDeadline } {
    const limit = runTimeoutMs(options.agent.definition.stopConditions);
    if (limit === undefined) return { options };
    const controller = new RunAbortController();
    const forward = () => controller.abort(options.signal.reason);
    if (options.controller) options.controller.onAbort(forward);
    else if (options.signal.aborted) forward();
    else options.signal.addEventListener('abort', forward, { once: true });
    const reason = new LunationError('timeout', `The run reached its ${limit} ms timeout`);
    const deadline = new RunDeadline(reason, controller, limit);
    return { options: { ...options, signal: controller.signal, controller }, deadline };
  }

  /** Whether this deadline stopped the run (`signal` is the run's). */
  stopped(signal: AbortSignal): boolean {
    return signal.reason === this.reason;
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}
