import type { FleetWorkerConfig } from '../../fixtures/fleet-worker.js';
import { type FixtureProcess, startFixtureProcess } from '../process-harness.js';

/** A worker SIGKILLed by the pool. */
export interface WorkerKill {
  worker: string;
  pid: number;
  at: number;
}

/** A worker stopped (SIGSTOP) from `start` to `end` (SIGCONT); `long` when it outlasted the lease TTL. */
export interface WorkerStall {
  worker: string;
  pid: number;
  start: number;
  /** Undefined while the worker is still stopped. */
  end: number | undefined;
  long: boolean;
}

/** A fixed number of worker processes that the test can kill (a replacement starts) or stall. */
export class WorkerPool {
  readonly kills: WorkerKill[] = [];
  readonly stalls: WorkerStall[] = [];
  /** Problems of worker processes that were not killed by the pool (a crash, an error line). */
  readonly failures: string[] = [];
  /** Errors the workers reported through `onError` (bookkeeping: extending a claim, a failed claim call). */
  readonly workerErrors: string[] = [];
  private readonly live = new Map<string, FixtureProcess>();
  private readonly resumes = new Map<string, () => void>();
  private started = 0;

  constructor(private readonly base: Omit<FleetWorkerConfig, 'name'>) {}

  /** Starts `count` workers and waits until each is ready. */
  async start(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.spawn()));
  }

  /** Live workers not stopped now. */
  running(): string[] {
    return [...this.live.keys()].filter((name) => !this.resumes.has(name));
  }

  stalledNow(): number {
    return this.resumes.size;
  }

  /** SIGKILLs the worker and starts its replacement (resolves once the replacement is ready). */
  async kill(name: string): Promise<void> {
    const victim = this.live.get(name);
    if (!victim) return;
    this.live.delete(name);
    victim.child.kill('SIGKILL');
    this.kills.push({ worker: name, pid: victim.child.pid ?? 0, at: Date.now() });
    await victim.exited;
    await this.spawn();
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
        stall.end = Date.now();
        resolve();
      };
      const timer = setTimeout(resume, ms);
      this.resumes.set(name, resume);
    });
  }

  /** Resumes stalled workers, then stops every worker with SIGTERM (they finish what they hold) and waits. */
  async stop(): Promise<void> {
    for (const resume of [...this.resumes.values()]) resume();
    await Promise.all(
      [...this.live.entries()].map(async ([name, worker]) => {
        worker.child.kill('SIGTERM');
        const code = await worker.exited;
        if (code !== 0) {
          const how = code === null ? `signal ${worker.child.signalCode}` : `code ${code}`;
          this.failures.push(`worker ${name} stopped with ${how}: ${worker.stderr().slice(-2_000)}`);
        }
      }),
    );
    this.live.clear();
  }

  private async spawn(): Promise<void> {
    const name = `worker-${++this.started}`;
    const worker = startFixtureProcess('fleet-worker.ts', { ...this.base, name } satisfies FleetWorkerConfig);
    worker.onLine((line) => {
      if (line.event === 'worker-error') this.workerErrors.push(`${name}: ${String(line.message)}`);
      if (line.event === 'error') this.failures.push(`worker ${name}: ${String(line.message)}`);
    });
    this.live.set(name, worker);
    await worker.waitFor('ready');
  }
}
