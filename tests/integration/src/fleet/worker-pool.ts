import type { FleetWorkerConfig } from '../../fixtures/fleet-worker.js';
import { type FixtureProcess, startFixtureProcess } from '../process-harness.js';

/** A worker SIGKILLed by the pool. */
export interface WorkerKill {
  worker: string;
  pid: number;
  at: number;
}

/**
 * A worker stopped (SIGSTOP) by the test from `start` to `end` (SIGCONT), `long` when it outlasted the lease
 * TTL; or (`frozen`) a worker whose own heartbeats stopped for longer than the pool's freeze limit although the
 * test did not stop it: its event loop was blocked.
 */
export interface WorkerStall {
  worker: string;
  pid: number;
  start: number;
  /** Undefined while the worker is still stopped (or, frozen, never beat again). */
  end: number | undefined;
  long: boolean;
  frozen?: boolean;
}

/** A fixed number of worker processes that the test can kill (a replacement starts) or stall. */
export class WorkerPool {
  readonly kills: WorkerKill[] = [];
  readonly stalls: WorkerStall[] = [];
  /** Problems of worker processes that were not killed by the pool (a crash, an error line). */
  readonly failures: string[] = [];
  /** Errors the workers reported through `onError` (bookkeeping: extending a claim, a failed claim call). */
  readonly workerErrors: string[] = [];
  /** Workers whose event loop stopped (no heartbeat for `freezeMs`) while the test let them run. */
  readonly freezes: WorkerStall[] = [];
  private readonly live = new Map<string, FixtureProcess>();
  private readonly resumes = new Map<string, () => void>();
  private readonly lastBeat = new Map<string, number>();
  private watching: NodeJS.Timeout | undefined;
  private stopping = false;
  /** Workers that said `ready`. */
  private readonly ready = new Set<string>();
  private started = 0;

  constructor(
    private readonly base: Omit<FleetWorkerConfig, 'name'>,
    private readonly freezeMs = 10_000,
  ) {}

  /** Starts `count` workers and waits until each is ready. */
  async start(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.spawn()));
  }

  /** Live workers, ready and not stopped now. */
  running(): string[] {
    return [...this.live.keys()].filter((name) => this.ready.has(name) && !this.resumes.has(name));
  }

  stalledNow(): number {
    return this.resumes.size;
  }

  /** SIGKILLs the worker and starts its replacement (see `starting()`). */
  kill(name: string): void {
    const victim = this.live.get(name);
    if (!victim) return;
    this.live.delete(name);
    this.ready.delete(name);
    victim.child.kill('SIGKILL');
    this.kills.push({ worker: name, pid: victim.child.pid ?? 0, at: Date.now() });
    victim.exited
      .then(() => this.spawn())
      .catch((error: unknown) => {
        if (!this.stopping) this.failures.push(`a replacement for ${name} did not start: ${String(error)}`);
      });
  }

  /** Workers started and not ready yet (a replacement can take seconds on a starved machine). */
  starting(): number {
    return this.live.size - this.ready.size;
  }

  /** SIGSTOPs the worker for `ms`, then SIGCONTs it; resolves when it runs again (early on `stop()`). */
  stall(name: string, ms: number, long: boolean): Promise<void> {
    const victim = this.live.get(name);
    if (!victim || this.resumes.has(name)) return Promise.resolve();
    const stall: WorkerStall = {
      worker: name,
      pid: victim.child.pid ?? 0,
      start: Date.now(),
      end: undefined,
      long,
    };
    victim.child.kill('SIGSTOP');
    this.stalls.push(stall);
    return new Promise((resolve) => {
      const resume = () => {
        clearTimeout(timer);
        this.resumes.delete(name);
        victim.child.kill('SIGCONT');
        this.lastBeat.set(name, Date.now());
        stall.end = Date.now();
        resolve();
      };
      const timer = setTimeout(resume, ms);
      this.resumes.set(name, resume);
    });
  }

  /**
   * Resumes stalled workers, then stops every worker with SIGTERM (they finish what they hold) and waits; a
   * worker still there `stopTimeoutMs` later is a failure (its last stage is reported) and is SIGKILLed.
   */
  async stop(stopTimeoutMs = 20_000): Promise<void> {
    this.stopping = true;
    clearInterval(this.watching);
    for (const resume of [...this.resumes.values()]) resume();
    // A replacement still starting has nothing to finish (and may not listen for SIGTERM yet).
    for (const [name, worker] of this.live) {
      if (this.ready.has(name)) continue;
      worker.child.kill('SIGKILL');
      this.live.delete(name);
    }
    await Promise.all(
      [...this.live.entries()].map(async ([name, worker]) => {
        const stages: string[] = [];
        worker.onLine((line) => {
          if (typeof line.event === 'string' && line.event !== 'worker-error')
            stages.push(JSON.stringify(line));
        });
        worker.child.kill('SIGTERM');
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => {
          timer = setTimeout(() => resolve('late'), stopTimeoutMs);
        });
        if ((await Promise.race([worker.exited, late])) === 'late') {
          this.failures.push(
            `worker ${name} (pid ${worker.child.pid}) did not exit within ${stopTimeoutMs} ms of SIGTERM; its last stage: ${stages.at(-1)}, its last heartbeat ${Date.now() - (this.lastBeat.get(name) ?? 0)} ms ago; stderr: ${worker.stderr().slice(-1_000)}`,
          );
          worker.child.kill('SIGKILL');
        }
        clearTimeout(timer);
        const code = await worker.exited;
        if (code === null && worker.child.signalCode === 'SIGKILL') return;
        if (code !== 0) {
          const how = code === null ? `signal ${worker.child.signalCode}` : `code ${code}`;
          this.failures.push(`worker ${name} stopped with ${how}: ${worker.stderr().slice(-2_000)}`);
        }
      }),
    );
    this.live.clear();
  }

  /** A heartbeat: the worker's event loop runs (a freeze it was in ends). */
  private beat(name: string, at: number): void {
    this.lastBeat.set(name, at);
    const freeze = this.freezes.find((stall) => stall.worker === name && stall.end === undefined);
    if (freeze) freeze.end = at;
  }

  /** Every second: a ready worker that the test lets run and that sent no heartbeat for `freezeMs` froze. */
  private watchHeartbeats(): void {
    this.watching ??= setInterval(() => {
      const now = Date.now();
      for (const name of this.running()) {
        const last = this.lastBeat.get(name);
        if (last === undefined || now - last <= this.freezeMs) continue;
        if (this.freezes.some((stall) => stall.worker === name && stall.end === undefined)) continue;
        const pid = this.live.get(name)?.child.pid ?? 0;
        this.freezes.push({ worker: name, pid, start: last, end: undefined, long: true, frozen: true });
      }
    }, 1_000);
  }

  private async spawn(): Promise<void> {
    if (this.stopping) return;
    const name = `worker-${++this.started}`;
    const worker = startFixtureProcess('fleet-worker.ts', { ...this.base, name } satisfies FleetWorkerConfig);
    worker.onLine((line) => {
      if (line.event === 'worker-error') this.workerErrors.push(`${name}: ${String(line.message)}`);
      if (line.event === 'error') this.failures.push(`worker ${name}: ${String(line.message)}`);
      if (line.event === 'heartbeat') this.beat(name, Number(line.at));
    });
    this.live.set(name, worker);
    await worker.waitFor('ready');
    this.lastBeat.set(name, Date.now());
    this.ready.add(name);
    this.watchHeartbeats();
  }
}
