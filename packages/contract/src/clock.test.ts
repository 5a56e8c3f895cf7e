import { describe, expect, it } from 'vitest';
import { type ClockTimer, sleepOn, systemClock } from './clock.js';
import { systemIds } from './id-source.js';

describe('systemClock', () => {
  it('reads the wall clock and a monotonic clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
    const first = systemClock.monotonic();
    expect(systemClock.monotonic()).toBeGreaterThanOrEqual(first);
  });

  it('runs a timeout once, and not once cleared', async () => {
    const calls: string[] = [];
    systemClock.setTimeout(() => calls.push('kept'), 5);
    const cleared = systemClock.setTimeout(() => calls.push('cleared'), 5);
    systemClock.clearTimeout(cleared);
    systemClock.clearTimeout(undefined);
    // A timer of another clock is not this one's: clearing it changes nothing here.
    const foreign: ClockTimer = { unref: () => foreign, ref: () => foreign };
    systemClock.clearTimeout(foreign);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(calls).toEqual(['kept']);
  });

  it('gives Node timers that unref and ref themselves, and clears them when unref-ed', async () => {
    const calls: string[] = [];
    const timer = systemClock.setTimeout(() => calls.push('ran'), 5);
    expect(timer.unref()).toBe(timer);
    expect(timer.ref()).toBe(timer);
    systemClock.clearTimeout(timer.unref());
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(calls).toEqual([]);
  });

  it('repeats an interval until cleared', async () => {
    let ticks = 0;
    const timer = systemClock.setInterval(() => ticks++, 5).unref();
    await new Promise((resolve) => setTimeout(resolve, 60));
    systemClock.clearInterval(timer);
    const seen = ticks;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(seen).toBeGreaterThanOrEqual(2);
    expect(ticks).toBe(seen);
  });

  it('sleeps, and rejects with the reason when its signal aborts (before or during)', async () => {
    await expect(systemClock.sleep(1)).resolves.toBeUndefined();
    const controller = new AbortController();
    const sleeping = systemClock.sleep(10_000, controller.signal);
    controller.abort(new Error('stop'));
    await expect(sleeping).rejects.toThrow('stop');
    await expect(systemClock.sleep(1, controller.signal)).rejects.toThrow('stop');
  });

  it('sleepOn clears its timer on abort', async () => {
    const cleared: unknown[] = [];
    const timer: ClockTimer = { unref: () => timer, ref: () => timer };
    const clock = {
      setTimeout: () => timer,
      clearTimeout: (handle: unknown) => cleared.push(handle),
    };
    const controller = new AbortController();
    const sleeping = sleepOn(clock, 100, controller.signal);
    controller.abort('why');
    await expect(sleeping).rejects.toBe('why');
    expect(cleared).toEqual([timer]);
  });
});

describe('systemIds', () => {
  it('makes distinct ids sharing one per-process prefix, and numbers in [0, 1)', () => {
    const ids = Array.from({ length: 100 }, () => systemIds.id());
    expect(new Set(ids).size).toBe(100);
    const prefix = ids[0]?.slice(0, 22);
    expect(prefix).toMatch(/^[0-9a-z]{21}-$/);
    expect(ids.every((id) => id.startsWith(prefix as string))).toBe(true);
    for (let index = 0; index < 100; index++) {
      const value = systemIds.random();
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(1);
    }
  });
});
