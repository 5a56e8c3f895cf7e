/** splitmix32: spreads a 32-bit state into well-mixed outputs; used to seed the main generator. */
function splitmix32(state: number): [next: number, output: number] {
  const next = (state + 0x9e3779b9) | 0;
  let z = next;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return [next, (z ^ (z >>> 16)) >>> 0];
}

/**
 * A seeded pseudo-random generator (xoshiro128**, seeded through splitmix32): the same seed gives the same
 * sequence on every platform. Fast and well distributed; not for secrets.
 */
export class SeededRandom {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** A generator for `seed`: any safe integer (both 32-bit halves are used). */
  constructor(readonly seed: number) {
    if (!Number.isSafeInteger(seed)) throw new RangeError(`The seed must be a safe integer, got ${seed}`);
    let state = (seed % 0x1_0000_0000) ^ Math.floor(seed / 0x1_0000_0000);
    const words: number[] = [];
    for (let index = 0; index < 4; index++) {
      const [next, output] = splitmix32(state);
      state = next;
      words.push(output);
    }
    [this.a, this.b, this.c, this.d] = words as [number, number, number, number];
    if ((this.a | this.b | this.c | this.d) === 0) this.a = 1;
  }

  /** The next 32-bit unsigned integer. */
  uint32(): number {
    const result = Math.imul(rotate(Math.imul(this.b, 5), 7), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotate(this.d, 11);
    return result;
  }

  /** A number in `[0, 1)`. */
  float(): number {
    return this.uint32() / 0x1_0000_0000;
  }

  /** An integer in `[min, max]` (both inclusive). */
  int(min: number, max: number): number {
    if (max < min) throw new RangeError(`int(${min}, ${max}): max is below min`);
    return min + Math.floor(this.float() * (max - min + 1));
  }

  /** True with probability `probability` (0 never draws: the sequence is not advanced). */
  chance(probability: number): boolean {
    if (probability <= 0) return false;
    return this.float() < probability;
  }

  /** One of `items`, uniformly; throws on an empty list. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick() needs at least one item');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** A new generator seeded from this one: an independent stream, so one consumer's draws do not shift another's. */
  fork(): SeededRandom {
    return new SeededRandom(this.uint32() * 0x20_0000 + (this.uint32() >>> 11));
  }
}

function rotate(value: number, bits: number): number {
  return (value << bits) | (value >>> (32 - bits));
}
