import type { FleetWorkerConfig } from '../../fixtures/fleet-worker.js';
import type { SeededRandom } from '../../fixtures/seeded-random.js';
import { type FixtureProcess, startFixtureProcess } from '../process-harness.js';

/** A worker SIGKILLed by the pool. */
export interface WorkerKill {
  worker: string;
  pid: number;
  at: number;
}

/** A fixed number of worker processes; `killAtRandom` SIGKILLs one now and then and starts a replacement. */
export class WorkerPool {
  readonly kills: WorkerKill[] = [];
  /** Problems of worker processes that were not killed by the pool (a crash, an error line). */
  readonly failures: string[] = [];
  private readonly live = new Map<string, FixtureProcess>();
  private started = 0;
  private killing: Promise<void> | undefined;
  private stopKilling = false;

  constructor(
    private readonly base: Omit<FleetWorkerConfig, 'name'>,
    private readonly random: SeededRandom,
  ) {}

  /** Starts `count` workers and waits until each is ready. */
  async start(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.spawn()));
  }

  /** SIGKILLs a random worker every `minMs`..`maxMs` and replaces it, until `stop()`. */
  killAtRandom(minMs: number, maxMs: number): void {
    this.killing = (async () => {
      while (!this.stopKilling) {
        await new Promise((resolve) => setTimeout(resolve, this.random.integer(minMs, maxMs)));
        if (this.stopKilling) break;
        const name = this.random.pick([...this.live.keys()]);
        const victim = this.live.get(name);
        if (!victim) continue;
        this.live.delete(name);
        victim.child.kill('SIGKILL');
        this.kills.push({ worker: name, pid: victim.child.pid ?? 0, at: Date.now() });
        await victim.exited;
        await this.spawn();
      }
    })();
  }

  /** Stops killing, then stops every worker with SIGTERM (they finish what they hold) and waits for them. */
  async stop(): Promise<void> {
    this.stopKilling = true;
    await this.killing;
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
      if (line.event === 'worker-error' || line.event === 'error') {
        this.failures.push(`worker ${name}: ${String(line.message)}`);
      }
    });
    this.live.set(name, worker);
    await worker.waitFor('ready');
  }
}
