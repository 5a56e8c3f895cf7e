/** Orders two items: negative when `a` comes first, positive when `b` does, 0 when they are equal. */
export type Comparator<T, K = T> = (item: T, key: K) => number;

/** The index of the first item that sorts after `key` (binary search over a sorted list). */
export function indexAfter<T, K>(items: readonly T[], key: K, compare: Comparator<T, K>): number {
  let low = 0;
  let high = items.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (compare(items[middle]!, key) <= 0) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** Inserts `item` after every item that sorts before or equal to it; appending is O(1). */
export function insertSorted<T>(items: T[], item: T, compare: Comparator<T>): void {
  const last = items.at(-1);
  if (last === undefined || compare(last, item) <= 0) {
    items.push(item);
    return;
  }
  items.splice(indexAfter(items, item, compare), 0, item);
}

/** Removes `item` (by identity) from a sorted list; false when it is not there. */
export function removeSorted<T>(items: T[], item: T, compare: Comparator<T>): boolean {
  let index = indexAfter(items, item, compare) - 1;
  while (index >= 0 && compare(items[index]!, item) === 0 && items[index] !== item) index -= 1;
  if (index < 0 || items[index] !== item) {
    index = items.indexOf(item);
    if (index < 0) return false;
  }
  items.splice(index, 1);
  return true;
}
