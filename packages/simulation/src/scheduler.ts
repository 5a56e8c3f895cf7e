import {
  type Clock,
  type ClockTimer,
  type IdSource,
  LunationError,
  sleepOn,
  systemClock,
} from '@lunation/contract';
import { PriorityQueue } from './priority-queue.js';
import { SeededIds } from './seeded-ids.js';
import { SeededRandom } from './seeded-random.js';
import { Trace, type TraceOptions } from './trace.js';

/** 2026-01-01T00:00:00Z: where virtual time starts unless told otherwise. */
const defaultStart = 1_767_225_600_000;

/** Options of {@link Scheduler}. */
export interface SchedulerOptions {
  /** The seed of every random choice the simulation makes. */
  seed: number;
  /**
   * `virtual` (the default): time is virtual and moves only when `run` / `step` take the next task; nothing
   * happens between steps. `live`: operations still complete one at a time, in an order the seed decides, but
   * on the host's event loop as soon as they are issued, with the real clock: for running the simulated parts
   * under tests that wait for real time (the store and dispatch kits).
   */
  mode?: 'virtual' | 'live';
  /** Virtual epoch milliseconds at the start. @default 1767225600000 (2026-01-01) */
  startTime?: number;
  /** Each operation completes after a latency drawn uniformly from `[0, maxLatencyMs]` virtual ms. @default 5 */
  maxLatencyMs?: number;
  /** How the trace is kept. */
  trace?: TraceOptions;
}

/**
 * Told of each operation as it is issued (see {@link Scheduler.watchOperations}); may stall its process at once (the
 * operation then applies only once the process resumes) or return a callback run once the operation applied,
 * before its answer reaches the process (a stall then holds the answer). The callback answers whether a held
 * answer reaches the process before the timers that fell due during the stall (else after them).
 */
export type OperationWatcher = (owner: SimulatedProcess, label: string) => (() => boolean) | undefined;

/** Options of one {@link Scheduler.operation}. */
export interface OperationOptions {
  /** Extra virtual latency on top of the drawn one (a late answer). @default 0 */
  delayMs?: number;
}

/** What {@link Scheduler.run} stopped on. */
export interface RunOutcome {
  /** `quiet`: nothing was left to do; `until`: the condition held; `max-steps` / `max-time`: a bound was hit. */
  reason: 'quiet' | 'until' | 'max-steps' | 'max-time';
  /** Steps taken by this call. */
  steps: number;
  /** Virtual time at the end (epoch ms). */
  time: number;
}

/** Bounds of {@link Scheduler.run}. */
export interface RunOptions {
  /** Stop once this holds (checked after every step). */
  until?: () => boolean;
  /** Stop after this many steps. @default 1_000_000 */
  maxSteps?: number;
  /** Stop before a task due after this virtual time (epoch ms). */
  maxTime?: number;
  /** Called after every step (for invariant checks); a throw stops the run and rejects it. */
  afterStep?: (step: number) => void;
}

interface Task {
  seq: number;
  dueAt: number;
  priority: number;
  owner: SimulatedProcess;
  label: string;
  run: () => void;
  cancelled: boolean;
  /** Pushed back to its process's end of a stall (see `next`). */
  deferred: boolean;
}

const compareTasks = (a: Task, b: Task): number =>
  a.dueAt - b.dueAt || a.priority - b.priority || a.seq - b.seq;

/**
 * Settles once every promise continuation queued so far has run, and every one they queued in turn: Node runs a
 * `process.nextTick` callback only once the microtask queue is empty. A `setImmediate` waits for the same and costs
 * an event-loop turn per step. (Ticks queued after this one would run after it; nothing the world runs queues any.)
 */
const settled = (): Promise<void> => new Promise((resolve) => process.nextTick(resolve));

/**
 * The seeded scheduler of a simulation: every operation a simulated part is asked for (a store call, a
 * dispatcher call) and every timer of a simulated process is a task in one priority queue, ordered by virtual due
 * time, then by a priority the seed draws. `run` takes tasks one at a time; after each, every promise
 * continuation it caused runs before the next (the host's microtasks are drained); when nothing is due, virtual
 * time jumps to the next task. The same seed gives the same order, the same faults and the same trace.
 */
export class Scheduler {
  /** The seed this scheduler was made with. */
  readonly seed: number;
  /** The scheduler's own random stream (task priorities and latencies). */
  readonly random: SeededRandom;
  /** What ran, in order. */
  readonly trace: Trace;
  /** `virtual` or `live` (see {@link SchedulerOptions.mode}). */
  readonly mode: 'virtual' | 'live';
  /** The world's process: owns operations issued without one, such as a test's own calls. */
  readonly world: SimulatedProcess;
  private readonly queue = new PriorityQueue<Task>(compareTasks);
  private readonly startTime: number;
  private readonly maxLatencyMs: number;
  private readonly processes = new Map<string, SimulatedProcess>();
  private readonly streams = new Map<string, SeededRandom>();
  private time: number;
  private seq = 0;
  private draining = false;
  private readonly watchers: OperationWatcher[] = [];
  /** Steps taken so far. */
  steps = 0;

  constructor(options: SchedulerOptions) {
    this.seed = options.seed;
    this.random = new SeededRandom(options.seed);
    this.mode = options.mode ?? 'virtual';
    this.startTime = options.startTime ?? defaultStart;
    this.time = this.startTime;
    this.maxLatencyMs = options.maxLatencyMs ?? 5;
    this.trace = new Trace(options.trace);
    this.world = this.process('world');
  }

  /**
   * Tells `watcher` of every operation issued from now on, after the watchers added before it; the first one that
   * returns a callback holds the operation's answer.
   */
  watchOperations(watcher: OperationWatcher): void {
    this.watchers.push(watcher);
  }

  /** What the watchers say of an operation as it is issued (see {@link OperationWatcher}). */
  private watched(owner: SimulatedProcess, label: string): (() => boolean) | undefined {
    let applied: (() => boolean) | undefined;
    for (const watcher of this.watchers) {
      const held = watcher(owner, label);
      applied ??= held;
    }
    return applied;
  }

  /** A seeded id source of its own stream (`ids:<name>`): the same seed gives the same ids. */
  ids(name = 'default'): IdSource {
    return new SeededIds(this.stream(`ids:${name}`));
  }

  /** Virtual time now (epoch ms); in `live` mode the real time. */
  now(): number {
    return this.mode === 'live' ? Date.now() : this.time;
  }

  /** Virtual milliseconds since the start. */
  elapsed(): number {
    return this.now() - this.startTime;
  }

  /**
   * An independent random stream for one purpose (a part's faults, a model's script), made on first use from
   * the seed and the name alone: adding draws to one stream never shifts another.
   */
  stream(name: string): SeededRandom {
    let stream = this.streams.get(name);
    if (stream === undefined) {
      let hash = this.seed % 0x1_0000_0000;
      for (let index = 0; index < name.length; index++)
        hash = Math.imul(hash ^ name.charCodeAt(index), 0x01000193);
      stream = new SeededRandom(
        Math.abs(hash) * 0x20_0000 + (Math.floor(this.seed / 0x1_0000_0000) & 0x1f_ffff),
      );
      this.streams.set(name, stream);
    }
    return stream;
  }

  /** The simulated process `name`, made on first use (alive, its clock `skewMs` ahead of virtual time). */
  process(name: string, options: { skewMs?: number } = {}): SimulatedProcess {
    let process = this.processes.get(name);
    if (process === undefined) {
      process = new SimulatedProcess(this, name, options.skewMs ?? 0);
      this.processes.set(name, process);
    }
    return process;
  }

  /**
   * Issues an operation of `owner`: `apply` runs when the scheduler takes it (after a drawn latency), and the
   * returned promise settles with what `apply` returned or threw. An operation of a crashed process never runs
   * and never settles, as its caller is gone.
   */
  operation<T>(
    owner: SimulatedProcess,
    label: string,
    apply: () => T | Promise<T>,
    options: OperationOptions = {},
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (!owner.alive) return;
      const applied = this.watchers.length === 0 ? undefined : this.watched(owner, label);
      const latency =
        this.mode === 'live' ? 0 : this.random.int(0, this.maxLatencyMs) + (options.delayMs ?? 0);
      const { trace } = this;
      // The answer reaches the process, unless it stalled meanwhile: then once it resumes.
      const answer = (deliver: () => void) => {
        const beforeTimers = applied?.() ?? false;
        if (owner.stalled) this.enqueue(owner, `${label} (answer)`, 0, beforeTimers ? -1 : 0, deliver);
        else deliver();
      };
      this.enqueue(owner, label, latency, this.random.uint32(), () => {
        let result: T | Promise<T>;
        try {
          result = apply();
        } catch (error) {
          if (trace.recording)
            trace.record(`${this.elapsed()} ${owner.name} ${label} ! ${describeError(error)}`);
          answer(() => reject(error));
          return;
        }
        Promise.resolve(result).then(
          (value) => {
            if (trace.recording)
              trace.record(`${this.elapsed()} ${owner.name} ${label} = ${describeValue(value)}`);
            answer(() => resolve(value));
          },
          (error: unknown) => {
            if (trace.recording)
              trace.record(`${this.elapsed()} ${owner.name} ${label} ! ${describeError(error)}`);
            answer(() => reject(error));
          },
        );
      });
    });
  }

  /** A timer task of `owner`, due `delayMs` from now; returns a handle to cancel it. @internal */
  timer(owner: SimulatedProcess, delayMs: number, callback: () => void): { cancelled: boolean } {
    return this.enqueue(owner, 'timer', Math.max(0, delayMs), 0, () => {
      if (this.trace.recording) this.trace.record(`${this.elapsed()} ${owner.name} timer`);
      callback();
    });
  }

  /** Takes the next task and runs it, then lets every continuation it caused run. False when none is left. */
  async step(): Promise<boolean> {
    const task = this.next();
    if (task === undefined) return false;
    if (task.dueAt > this.time) this.time = task.dueAt;
    this.steps++;
    task.run();
    await settled();
    return true;
  }

  /** Runs tasks until nothing is left, `until` holds, or a bound is hit. Virtual mode only. */
  async run(options: RunOptions = {}): Promise<RunOutcome> {
    if (this.mode !== 'virtual')
      throw new Error('run() drives virtual time; a live scheduler runs by itself');
    const maxSteps = options.maxSteps ?? 1_000_000;
    let steps = 0;
    await settled();
    for (;;) {
      if (options.until?.()) return { reason: 'until', steps, time: this.time };
      if (steps >= maxSteps) return { reason: 'max-steps', steps, time: this.time };
      const next = this.peek();
      if (next === undefined) return { reason: 'quiet', steps, time: this.time };
      if (options.maxTime !== undefined && next.dueAt > options.maxTime) {
        return { reason: 'max-time', steps, time: this.time };
      }
      await this.step();
      steps++;
      options.afterStep?.(this.steps);
    }
  }

  /** Tasks waiting (cancelled ones may still be counted until they reach the front). */
  get pendingTasks(): number {
    return this.queue.size;
  }

  /** Brings the tasks `owner` deferred to the end of its stall forward to `at` (it resumes early). @internal */
  resumeEarly(owner: SimulatedProcess, at: number): void {
    for (const task of owner.tasks) {
      if (!task.deferred) continue;
      task.deferred = false;
      task.dueAt = at;
    }
    this.queue.reorder();
  }

  /** Drops every task of `owner` (its process crashed). @internal */
  dropTasksOf(owner: SimulatedProcess): void {
    for (const task of owner.tasks) task.cancelled = true;
    owner.tasks.clear();
  }

  private enqueue(
    owner: SimulatedProcess,
    label: string,
    delay: number,
    priority: number,
    run: () => void,
  ): Task {
    const task: Task = {
      seq: this.seq++,
      dueAt: this.now() + delay,
      priority,
      owner,
      label,
      run,
      cancelled: false,
      deferred: false,
    };
    owner.tasks.add(task);
    this.queue.push(task);
    if (this.mode === 'live' && !this.draining) {
      this.draining = true;
      setImmediate(() => this.drainLive());
    }
    return task;
  }

  /** Takes the next task to run off the queue (and off its owner's list). */
  private next(): Task | undefined {
    for (;;) {
      const task = this.queue.pop();
      if (task === undefined) return task;
      if (task.cancelled) continue;
      const resumesAt = task.owner.stalledUntil;
      if (this.mode === 'virtual' && resumesAt > task.dueAt) {
        // A stalled process does nothing: its due operations and timers wait until it resumes.
        task.dueAt = resumesAt;
        task.deferred = true;
        this.queue.push(task);
        continue;
      }
      task.owner.tasks.delete(task);
      return task;
    }
  }

  private peek(): Task | undefined {
    for (;;) {
      const task = this.queue.peek();
      if (task === undefined || !task.cancelled) return task;
      this.queue.pop();
    }
  }

  private drainLive(): void {
    this.draining = false;
    for (let task = this.next(); task !== undefined; task = this.next()) {
      this.steps++;
      task.run();
    }
  }
}

/**
 * One simulated process: it owns operations and timers; its `clock` is the virtual clock as this process reads it
 * (with its skew). `crash()` makes it vanish: its pending operations and timers never run, and later ones
 * never settle.
 */
export class SimulatedProcess {
  /** False once crashed. */
  alive = true;
  /** Virtual time (epoch ms) until which the process is stalled: none of its tasks runs before then. */
  stalledUntil = Number.NEGATIVE_INFINITY;
  /** This process's view of time. */
  readonly clock: Clock;
  /** @internal */
  readonly tasks = new Set<Task>();

  constructor(
    private readonly scheduler: Scheduler,
    /** The process's name, as the trace shows it. */
    readonly name: string,
    /** How far ahead of virtual time this process's wall clock reads (negative: behind). */
    readonly skewMs: number,
  ) {
    this.clock = scheduler.mode === 'live' ? systemClock : new VirtualClock(scheduler, this);
  }

  private readonly crashHooks: (() => void)[] = [];

  /**
   * Stops the process at once: nothing it issued runs, nothing it issues later runs, and what the simulated parts
   * kept for it (a waiting claim, a cancel watch: its connections) goes, through the hooks given to `onCrash`.
   */
  crash(): void {
    if (!this.alive) return;
    this.alive = false;
    this.scheduler.trace.record(`${this.scheduler.elapsed()} ${this.name} crash`);
    this.scheduler.dropTasksOf(this);
    for (const hook of this.crashHooks.splice(0)) hook();
  }

  /**
   * Stalls the process for `ms` virtual ms (a GC pause, a starved CPU, SIGSTOP): its pending operations and timers
   * wait, nothing of it runs, virtual time goes on; then it continues where it was, its clock `ms` later.
   */
  stall(ms: number, at?: string): void {
    if (!this.alive) return;
    this.stalledUntil = Math.max(this.stalledUntil, this.scheduler.now() + ms);
    this.scheduler.trace.record(
      `${this.scheduler.elapsed()} ${this.name} stall ${ms}${at === undefined ? '' : ` at ${at}`}`,
    );
  }

  /**
   * Ends the stall at `at` (virtual epoch ms) when it would end later: what the process deferred to the end of the
   * stall runs then.
   */
  resumeAt(at: number): void {
    if (!this.alive || at >= this.stalledUntil) return;
    this.stalledUntil = at;
    this.scheduler.trace.record(
      `${this.scheduler.elapsed()} ${this.name} resumes in ${at - this.scheduler.now()}`,
    );
    this.scheduler.resumeEarly(this, at);
  }

  /** True while the process is stalled. */
  get stalled(): boolean {
    return this.stalledUntil > this.scheduler.now();
  }

  /** Runs `hook` when the process crashes (a simulated part dropping what it holds for the process). */
  onCrash(hook: () => void): void {
    if (this.alive) this.crashHooks.push(hook);
    else hook();
  }
}

class VirtualTimer implements ClockTimer {
  task: { cancelled: boolean } | undefined;
  unref(): ClockTimer {
    return this;
  }

  ref(): ClockTimer {
    return this;
  }
}

/** A {@link Clock} on the scheduler's virtual time, as one simulated process reads it. */
class VirtualClock implements Clock {
  constructor(
    private readonly scheduler: Scheduler,
    private readonly owner: SimulatedProcess,
  ) {}

  now(): number {
    return this.scheduler.now() + this.owner.skewMs;
  }

  monotonic(): number {
    return this.scheduler.elapsed();
  }

  setTimeout(callback: () => void, ms: number): ClockTimer {
    const timer = new VirtualTimer();
    timer.task = this.scheduler.timer(this.owner, ms, callback);
    return timer;
  }

  setInterval(callback: () => void, ms: number): ClockTimer {
    const timer = new VirtualTimer();
    const arm = () => {
      timer.task = this.scheduler.timer(this.owner, Math.max(1, ms), () => {
        arm();
        callback();
      });
    };
    arm();
    return timer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    if (timer instanceof VirtualTimer && timer.task !== undefined) timer.task.cancelled = true;
  }

  clearInterval(timer: ClockTimer | undefined): void {
    this.clearTimeout(timer);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }
}

/** How an error reads in the trace: its Lunation code, or its name. */
export function describeError(error: unknown): string {
  if (LunationError.isInstance(error)) return error.code;
  return error instanceof Error ? error.name : typeof error;
}

/** How a result reads in the trace: short and deterministic. */
export function describeValue(value: unknown): string {
  if (value === undefined) return '-';
  if (value === null || typeof value !== 'object') return String(value);
  if (Array.isArray(value)) return `[${value.length}]`;
  return 'ok';
}

/** A {@link LunationError} for an answer that never came: the caller cannot tell whether the call applied. */
export function unavailableError(label: string): LunationError {
  return new LunationError(
    'store-unavailable',
    `Simulated fault: no answer to ${label}; the call may or may not have applied, retry it`,
    {
      retryable: true,
      details: { simulated: true, operation: label },
    },
  );
}
