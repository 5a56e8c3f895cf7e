import { describe, expect, it } from 'vitest';
import { indexAfter, insertSorted, removeSorted } from './sorted-list.js';

interface Item {
  key: number;
  name: string;
}

const byKey = (a: Item, b: Item) => a.key - b.key;

describe('sorted-list', () => {
  it('indexAfter finds the first item sorting after the key', () => {
    const items = [1, 3, 3, 5];
    const compare = (item: number, key: number) => item - key;
    expect([0, 1, 3, 4, 5, 6].map((key) => indexAfter(items, key, compare))).toEqual([0, 1, 3, 3, 4, 4]);
    expect(indexAfter([], 1, compare)).toBe(0);
  });

  it('insertSorted keeps order, and equal items keep their insertion order', () => {
    const items: Item[] = [];
    for (const [key, name] of [
      [5, 'a'],
      [1, 'b'],
      [3, 'c'],
      [3, 'd'],
      [9, 'e'],
      [1, 'f'],
    ] as const) {
      insertSorted(items, { key, name }, byKey);
    }
    expect(items.map((item) => item.name)).toEqual(['b', 'f', 'c', 'd', 'a', 'e']);
  });

  it('removeSorted removes exactly the given item among equal ones', () => {
    const items: Item[] = [];
    const twins = [
      { key: 2, name: 'x' },
      { key: 2, name: 'y' },
      { key: 2, name: 'z' },
    ];
    for (const item of [{ key: 1, name: 'w' }, ...twins, { key: 3, name: 'v' }])
      insertSorted(items, item, byKey);
    expect(removeSorted(items, twins[1]!, byKey)).toBe(true);
    expect(items.map((item) => item.name)).toEqual(['w', 'x', 'z', 'v']);
    expect(removeSorted(items, twins[1]!, byKey)).toBe(false);
    expect(removeSorted(items, twins[0]!, byKey)).toBe(true);
    expect(items.map((item) => item.name)).toEqual(['w', 'z', 'v']);
  });
});
