import { describe, expect, it } from 'vitest';
import { copyJson } from './json-copy.js';

/** What JSON itself gives. */
const roundTrip = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('copyJson', () => {
  it('gives what a JSON round trip gives', () => {
    const date = new Date(1_000);
    const values: unknown[] = [
      { a: 1, b: 'x', c: true, d: null, nested: { list: [1, 'two', { three: 3 }] } },
      { dropped: undefined, fn: () => 1, symbol: Symbol('s'), kept: 0 },
      [undefined, () => 1, Symbol('s'), Number.NaN, Number.POSITIVE_INFINITY, -0, 'end'],
      { when: date, map: new Map([[1, 2]]), set: new Set([1]), boxed: [new String('s'), new Number(2)] },
      { custom: { toJSON: () => ({ replaced: true }) } },
      Object.assign(Object.create(null) as object, { bare: 1 }),
      { sparse: Object.assign(new Array<number>(3), { 0: 1, 2: 3 }) },
      { shared: [{ a: 1 }, { a: 1 }] },
    ];
    for (const value of values) expect(copyJson(value)).toEqual(roundTrip(value));
  });

  it('calls toJSON as JSON does: on arrays too, and with the key the value is found under', () => {
    const replaced = (key: string) => `key ${JSON.stringify(key)}`;
    class Tagged extends Array<number> {
      toJSON() {
        return 'tagged';
      }
    }
    const values: unknown[] = [
      Object.assign([1, 2], { toJSON: () => 'replaced' }),
      { list: Object.assign([1, 2], { toJSON: () => ({ was: 'a list' }) }) },
      Tagged.from([1]),
      { member: { toJSON: replaced }, list: [1, { toJSON: replaced }], date: new Date(5) },
      { toJSON: replaced },
      { member: { toJSON: () => undefined }, list: [{ toJSON: () => undefined }] },
    ];
    for (const value of values) expect(copyJson(value)).toEqual(roundTrip(value));
  });

  it('copies: changing the copy or the original leaves the other alone', () => {
    const original = { list: [{ a: 1 }], inner: { b: 2 } };
    const copied = copyJson(original);
    copied.list[0]!.a = 9;
    original.inner.b = 8;
    expect(original.list[0]!.a).toBe(1);
    expect(copied.inner.b).toBe(2);
    expect(copied).not.toBe(original);
  });

  it('keeps a value that appears twice (not a cycle) and throws for cycles and BigInts as JSON does', () => {
    const shared = { x: 1 };
    expect(copyJson({ a: shared, b: [shared] })).toEqual({ a: { x: 1 }, b: [{ x: 1 }] });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    expect(() => copyJson(cyclic)).toThrow(TypeError);
    expect(() => copyJson({ list: [1n] })).toThrow(TypeError);
  });

  it('tells deep data from cycles at any depth', () => {
    const nest = (depth: number, leaf: unknown): Record<string, unknown> => {
      let value: Record<string, unknown> = { leaf };
      for (let level = 0; level < depth; level++) value = { level, next: value, list: [value.leaf] };
      return value;
    };
    const shared = { x: [1] };
    const deep = nest(100, shared);
    (deep as { also?: unknown }).also = nest(60, shared);
    expect(copyJson(deep)).toEqual(roundTrip(deep));
    for (const depth of [0, 1, 31, 32, 33, 100]) {
      const loop: Record<string, unknown> = { start: true };
      const cyclic = nest(depth, { inner: [loop] });
      loop.back = [cyclic];
      expect(() => copyJson(cyclic), `cycle at depth ${depth}`).toThrow(TypeError);
      const late: Record<string, unknown> = {};
      late.self = late;
      expect(() => copyJson(nest(depth, late)), `self-reference at depth ${depth}`).toThrow(TypeError);
    }
  });
});
