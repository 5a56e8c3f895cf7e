import { type Clock, type ClockTimer, LunationError, systemClock } from '@lunation/contract';
import { RunAbortController, type RunLoopOptions } from './run-scope.js';
import { runTimeoutMs } from './stop-conditions.js';

/**
 * The run's `timeout` stop condition as a signal of the run's own, which also ends a run stuck in a model or
 * tool call: the caller's cancel is forwarded to it, and the deadline aborts it with its own reason.
 */
export class RunDeadline {
  /** The run's options with the deadline's signal and controller. */
  readonly options: RunLoopOptions;
  private readonly reason: LunationError;
  private readonly clock: Clock;
  private readonly timer: ClockTimer;

  private constructor(options: RunLoopOptions, limit: number) {
    const controller = new RunAbortController();
    const forward = () => controller.abort(options.signal.reason);
    if (options.controller) options.controller.onAbort(forward);
    else if (options.signal.aborted) forward();
    else options.signal.addEventListener('abort', forward, { once: true });
    const reason = new LunationError('timeout', `The run reached its ${limit} ms timeout`);
    this.reason = reason;
    this.clock = options.clock ?? systemClock;
    this.timer = this.clock.setTimeout(() => controller.abort(reason), limit).unref();
    this.options = { ...options, signal: controller.signal, controller };
  }

  /** The deadline of a run whose agent has a `timeout` stop condition; undefined for one without. */
  static arm(options: RunLoopOptions): RunDeadline | undefined {
    const limit = runTimeoutMs(options.agent.definition.stopConditions);
    return limit === undefined ? undefined : new RunDeadline(options, limit);
  }

  /** Whether this deadline stopped the run (`signal` is the run's). */
  stopped(signal: AbortSignal): boolean {
    return signal.reason === this.reason;
  }

  clear(): void {
    this.clock.clearTimeout(this.timer);
  }
}
