import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { Scheduler } from './scheduler.js';

describe('Scheduler', () => {
  it('completes operations one at a time, in an order the seed decides', async () => {
    const order = async (seed: number) => {
      const scheduler = new Scheduler({ seed });
      const done: number[] = [];
      for (let index = 0; index < 12; index++) {
        void scheduler.operation(scheduler.world, `op ${index}`, () => done.push(index));
      }
      const outcome = await scheduler.run();
      expect(outcome.reason).toBe('quiet');
      expect(outcome.steps).toBe(12);
      return done;
    };
    const first = await order(1);
    expect([...first].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(await order(1)).toEqual(first);
    const others = await Promise.all([2, 3, 4, 5].map(order));
    expect(others.some((other) => other.join() !== first.join())).toBe(true);
  });

  it('settles an operation with what it returned or threw, and traces both', async () => {
    const scheduler = new Scheduler({ seed: 1, trace: { keepAll: true } });
    const ok = scheduler.operation(scheduler.world, 'answer', () => 42);
    const failed = scheduler.operation(scheduler.world, 'refuse', () => {
      throw new LunationError('not-found', 'nothing here');
    });
    failed.catch(() => undefined);
    await scheduler.run();
    await expect(ok).resolves.toBe(42);
    await expect(failed).rejects.toThrow('nothing here');
    const lines = scheduler.trace.lines().map((line) => line.replace(/^\d+ /, ''));
    expect(lines.sort()).toEqual(['world answer = 42', 'world refuse ! not-found']);
  });

  it('holds a stalled process: its due timers and operations wait until it resumes, others go on', async () => {
    const scheduler = new Scheduler({ seed: 3, startTime: 0, maxLatencyMs: 0 });
    const zombie = scheduler.process('zombie');
    const other = scheduler.process('other');
    const seen: string[] = [];
    zombie.clock.setTimeout(() => seen.push(`zombie timer at ${zombie.clock.now()}`), 1_000);
    other.clock.setTimeout(() => seen.push(`other timer at ${other.clock.now()}`), 2_000);
    void scheduler.operation(zombie, 'write', () => seen.push(`zombie write at ${scheduler.now()}`));
    zombie.stall(5_000);
    expect(zombie.stalled).toBe(true);
    await scheduler.run();
    expect(seen[0]).toBe('other timer at 2000');
    expect(seen.slice(1).sort()).toEqual(['zombie timer at 5000', 'zombie write at 5000']);
    expect(zombie.stalled).toBe(false);
  });

  it('holds the answer of an operation whose process stalled as it applied: the write is done, the process hears later', async () => {
    const scheduler = new Scheduler({ seed: 3, startTime: 0, maxLatencyMs: 0 });
    const zombie = scheduler.process('zombie');
    let stored = 0;
    let heardAt: number | undefined;
    scheduler.watchOperations((owner, label) =>
      label === 'write'
        ? () => {
            owner.stall(5_000);
            return true;
          }
        : undefined,
    );
    void scheduler
      .operation(zombie, 'write', () => ++stored)
      .then(() => {
        heardAt = scheduler.now();
      });
    await scheduler.run({ until: () => stored > 0 });
    expect(stored).toBe(1);
    expect(heardAt).toBeUndefined();
    await scheduler.run();
    expect(heardAt).toBe(5_000);
  });

  it('tells every operation watcher of each operation; the first that answers with a callback holds the answer', async () => {
    const scheduler = new Scheduler({ seed: 4, startTime: 0, maxLatencyMs: 0 });
    const worker = scheduler.process('worker');
    const told: string[] = [];
    let held = 0;
    scheduler.watchOperations((_, label) => {
      told.push(`first ${label}`);
      if (label !== 'write') return undefined;
      return () => {
        held++;
        return false;
      };
    });
    scheduler.watchOperations((_, label) => {
      told.push(`second ${label}`);
      return () => {
        throw new Error('a later watcher does not hold an answer an earlier one holds');
      };
    });
    void scheduler.operation(worker, 'write', () => 1);
    await scheduler.run();
    expect(told).toEqual(['first write', 'second write']);
    expect(held).toBe(1);
  });

  it('resumes a stalled process early: what it deferred runs then, its later timers when due', async () => {
    const scheduler = new Scheduler({ seed: 3, startTime: 0, maxLatencyMs: 0 });
    const zombie = scheduler.process('zombie');
    const other = scheduler.process('other');
    const seen: string[] = [];
    zombie.clock.setTimeout(() => seen.push(`zombie timer at ${scheduler.now()}`), 1_000);
    zombie.clock.setTimeout(() => seen.push(`zombie late timer at ${scheduler.now()}`), 9_000);
    other.clock.setTimeout(() => zombie.resumeAt(3_000), 2_000);
    zombie.stall(60_000);
    await scheduler.run();
    expect(seen).toEqual(['zombie timer at 3000', 'zombie late timer at 9000']);
    expect(scheduler.trace.lines().some((line) => line.includes('zombie resumes in 1000'))).toBe(true);
  });

  it('jumps virtual time to the next timer when nothing is ready; intervals repeat until cleared', async () => {
    const scheduler = new Scheduler({ seed: 1, startTime: 1_000 });
    const clock = scheduler.world.clock;
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(clock.now()), 60_000);
    const cleared = clock.setTimeout(() => fired.push(-1), 10);
    clock.clearTimeout(cleared);
    let ticks = 0;
    const interval = clock.setInterval(() => {
      ticks++;
      if (ticks === 3) clock.clearInterval(interval);
    }, 1_000);
    const started = performance.now();
    await scheduler.run();
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(fired).toEqual([61_000]);
    expect(ticks).toBe(3);
    expect(scheduler.now()).toBe(61_000);
    expect(clock.monotonic()).toBe(60_000);
  });

  it('sleeps on virtual time, and a sleep rejects when its signal aborts', async () => {
    const scheduler = new Scheduler({ seed: 1, startTime: 0 });
    const clock = scheduler.world.clock;
    const woke: number[] = [];
    void clock.sleep(500).then(() => woke.push(clock.now()));
    const controller = new AbortController();
    const aborted = clock.sleep(10_000, controller.signal);
    aborted.catch(() => undefined);
    clock.setTimeout(() => controller.abort(new Error('stop')), 100);
    await scheduler.run();
    await expect(aborted).rejects.toThrow('stop');
    expect(woke).toEqual([500]);
    expect(scheduler.now()).toBe(500);
  });

  it('stops on until, maxSteps and maxTime', async () => {
    const scheduler = new Scheduler({ seed: 1, startTime: 0 });
    let count = 0;
    scheduler.world.clock.setInterval(() => count++, 10);
    expect((await scheduler.run({ until: () => count === 5 })).reason).toBe('until');
    expect((await scheduler.run({ maxSteps: 3 })).reason).toBe('max-steps');
    expect(count).toBe(8);
    const outcome = await scheduler.run({ maxTime: 200 });
    expect(outcome).toEqual({ reason: 'max-time', steps: 12, time: 200 });
  });

  it('a crashed process runs nothing more: its operations and timers vanish, later ones never settle', async () => {
    const scheduler = new Scheduler({ seed: 1 });
    const worker = scheduler.process('worker');
    const ran: string[] = [];
    const pending = scheduler.operation(worker, 'write', () => ran.push('write'));
    worker.clock.setTimeout(() => ran.push('timer'), 10);
    worker.crash();
    const later = scheduler.operation(worker, 'later', () => ran.push('later'));
    let settled = false;
    void Promise.race([pending, later]).finally(() => {
      settled = true;
    });
    expect((await scheduler.run()).reason).toBe('quiet');
    expect(ran).toEqual([]);
    expect(settled).toBe(false);
    expect(worker.alive).toBe(false);
  });

  it("reads a process's wall clock with its skew; monotonic time has none", () => {
    const scheduler = new Scheduler({ seed: 1, startTime: 10_000 });
    const ahead = scheduler.process('ahead', { skewMs: 250 });
    const behind = scheduler.process('behind', { skewMs: -250 });
    expect([ahead.clock.now(), behind.clock.now(), scheduler.world.clock.now()]).toEqual([
      10_250, 9_750, 10_000,
    ]);
    expect(ahead.clock.monotonic()).toBe(behind.clock.monotonic());
  });

  it('gives independent named streams: draws on one never shift another', () => {
    const a = new Scheduler({ seed: 5 });
    const b = new Scheduler({ seed: 5 });
    a.stream('faults').uint32();
    a.stream('faults').uint32();
    expect(a.stream('model').uint32()).toBe(b.stream('model').uint32());
    expect(a.stream('model').uint32()).not.toBe(a.stream('other').uint32());
    expect(a.ids().id()).toBe(b.ids().id());
  });
});
