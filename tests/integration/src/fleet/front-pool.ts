import type { FleetFrontConfig } from '../../fixtures/fleet-front.js';
import { type FixtureProcess, startFixtureProcess } from '../process-harness.js';

/** A front SIGKILLed (a replacement starts on a new port) or stalled (SIGSTOP … SIGCONT) by the test. */
export interface FrontDisturbance {
  front: string;
  pid: number;
  kind: 'kill' | 'stall';
  start: number;
  /** When a stalled front was let go on (undefined while stopped; a kill has none). */
  end?: number;
}

interface Slot {
  name: string;
  process: FixtureProcess;
  url: string | undefined;
  stalled: (() => void) | undefined;
}

/**
 * Two (or more) HTTP fronts of the fleet in processes of their own, each in a slot a user addresses by index:
 * the test kills a front (its slot gets a replacement on a new port; until it is ready, requests to the slot
 * fail to connect) or stalls it (its open requests and streams go silent, then it goes on late).
 */
export class FrontPool {
  readonly disturbances: FrontDisturbance[] = [];
  readonly failures: string[] = [];
  /** Errors the fronts logged (500s: the users see them too). */
  readonly frontErrors: string[] = [];
  private readonly slots: Slot[] = [];
  private started = 0;
  private stopping = false;

  constructor(private readonly base: Omit<FleetFrontConfig, 'name'>) {}

  async start(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, (_, index) => this.spawn(index)));
  }

  /** The slot's front as a user reaches it now; undefined while its replacement starts. */
  url(slot: number): string | undefined {
    return this.slots[slot]?.url;
  }

  /** Slots whose front runs and is not stalled. */
  running(): number[] {
    return this.slots.flatMap((slot, index) => (slot.url !== undefined && !slot.stalled ? [index] : []));
  }

  kill(index: number): void {
    const slot = this.slots[index];
    if (!slot?.url) return;
    slot.url = undefined;
    slot.process.child.kill('SIGKILL');
    this.disturbances.push({
      front: slot.name,
      pid: slot.process.child.pid ?? 0,
      kind: 'kill',
      start: Date.now(),
    });
    slot.process.exited
      .then(() => this.spawn(index))
      .catch((error: unknown) => {
        if (!this.stopping)
          this.failures.push(`a replacement for ${slot.name} did not start: ${String(error)}`);
      });
  }

  /** SIGSTOPs the slot's front for `ms`, then SIGCONTs it; resolves when it runs again (early on `stop()`). */
  stall(index: number, ms: number): Promise<void> {
    const slot = this.slots[index];
    if (!slot?.url || slot.stalled) return Promise.resolve();
    const stall: FrontDisturbance = {
      front: slot.name,
      pid: slot.process.child.pid ?? 0,
      kind: 'stall',
      start: Date.now(),
    };
    slot.process.child.kill('SIGSTOP');
    this.disturbances.push(stall);
    return new Promise((resolve) => {
      const resume = () => {
        clearTimeout(timer);
        slot.stalled = undefined;
        slot.process.child.kill('SIGCONT');
        stall.end = Date.now();
        resolve();
      };
      const timer = setTimeout(resume, ms);
      slot.stalled = resume;
    });
  }

  /** Lets stalled fronts go on, then stops every front with SIGTERM and waits (SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 10_000): Promise<void> {
    this.stopping = true;
    for (const slot of this.slots) slot.stalled?.();
    await Promise.all(
      this.slots.map(async (slot) => {
        slot.process.child.kill(slot.url === undefined ? 'SIGKILL' : 'SIGTERM');
        const timer = setTimeout(() => {
          this.failures.push(`front ${slot.name} did not exit within ${timeoutMs} ms of SIGTERM`);
          slot.process.child.kill('SIGKILL');
        }, timeoutMs);
        await slot.process.exited;
        clearTimeout(timer);
      }),
    );
  }

  private async spawn(index: number): Promise<void> {
    if (this.stopping) return;
    const name = `front-${++this.started}`;
    const front = startFixtureProcess('fleet-front.ts', { ...this.base, name } satisfies FleetFrontConfig);
    front.onLine((line) => {
      if (line.event === 'front-error') this.frontErrors.push(`${name}: ${String(line.message)}`);
      if (line.event === 'error') this.failures.push(`front ${name}: ${String(line.message)}`);
    });
    const slot: Slot = { name, process: front, url: undefined, stalled: undefined };
    this.slots[index] = slot;
    const ready = await front.waitFor('ready');
    if (!this.stopping) slot.url = `http://127.0.0.1:${Number(ready.port)}`;
  }
}
