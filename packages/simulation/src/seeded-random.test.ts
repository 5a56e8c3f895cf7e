import { describe, expect, it } from 'vitest';
import { PriorityQueue } from './priority-queue.js';
import { SeededRandom } from './seeded-random.js';

describe('SeededRandom', () => {
  it('gives the same sequence for the same seed, another for another seed', () => {
    const draw = (seed: number) =>
      Array.from(
        { length: 50 },
        (() => {
          const random = new SeededRandom(seed);
          return () => random.uint32();
        })(),
      );
    expect(draw(42)).toEqual(draw(42));
    expect(draw(42)).not.toEqual(draw(43));
    expect(draw(2 ** 40 + 7)).not.toEqual(draw(7));
  });

  it('keeps its sequence across versions (traces of old seeds stay replayable)', () => {
    const random = new SeededRandom(1);
    expect(Array.from({ length: 4 }, () => random.uint32())).toEqual(FIRST_OF_SEED_1);
  });

  it('draws integers within bounds, covering them, and floats in [0, 1)', () => {
    const random = new SeededRandom(7);
    const seen = new Set<number>();
    for (let index = 0; index < 2_000; index++) {
      const value = random.int(3, 9);
      expect(value).toBeGreaterThanOrEqual(3);
      expect(value).toBeLessThanOrEqual(9);
      seen.add(value);
      const float = random.float();
      expect(float).toBeGreaterThanOrEqual(0);
      expect(float).toBeLessThan(1);
    }
    expect([...seen].sort()).toEqual([3, 4, 5, 6, 7, 8, 9]);
  });

  it('chance(0) draws nothing; chance(p) comes up about p of the time', () => {
    const a = new SeededRandom(5);
    const b = new SeededRandom(5);
    expect(a.chance(0)).toBe(false);
    expect(a.uint32()).toBe(b.uint32());
    let hits = 0;
    for (let index = 0; index < 10_000; index++) if (a.chance(0.25)) hits++;
    expect(hits).toBeGreaterThan(2_300);
    expect(hits).toBeLessThan(2_700);
  });

  it('forks independent streams, and rejects unsafe seeds', () => {
    const random = new SeededRandom(9);
    const fork = random.fork();
    expect(fork.uint32()).not.toBe(random.uint32());
    expect(() => new SeededRandom(0.5)).toThrow(RangeError);
    expect(() => random.pick([])).toThrow(RangeError);
  });
});

describe('PriorityQueue', () => {
  it('pops in order whatever the push order', () => {
    const random = new SeededRandom(3);
    const queue = new PriorityQueue<number>((a, b) => a - b);
    const values = Array.from({ length: 500 }, () => random.int(0, 100));
    for (const value of values) queue.push(value);
    expect(queue.size).toBe(500);
    const popped: number[] = [];
    for (let value = queue.pop(); value !== undefined; value = queue.pop()) popped.push(value);
    expect(popped).toEqual([...values].sort((a, b) => a - b));
    expect(queue.peek()).toBeUndefined();
  });
});

/** The first four outputs of seed 1, recorded when the generator was written. */
const FIRST_OF_SEED_1 = [2442144158, 3238099751, 3819917871, 2104621829];
