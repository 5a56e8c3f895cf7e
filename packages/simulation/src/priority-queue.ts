/** A binary min-heap ordered by `compare` (negative: `a` first). */
export class PriorityQueue<T> {
  private readonly items: T[] = [];

  constructor(private readonly compare: (a: T, b: T) => number) {}

  /** How many items are queued. */
  get size(): number {
    return this.items.length;
  }

  /** The first item, left in place. */
  peek(): T | undefined {
    return this.items[0];
  }

  /** Adds an item. */
  push(item: T): void {
    const items = this.items;
    items.push(item);
    let index = items.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (this.compare(items[index] as T, items[parent] as T) >= 0) break;
      [items[index], items[parent]] = [items[parent] as T, items[index] as T];
      index = parent;
    }
  }

  /** Removes and returns the first item. */
  pop(): T | undefined {
    const items = this.items;
    const first = items[0];
    const last = items.pop();
    if (items.length === 0 || last === undefined) return first;
    items[0] = last;
    let index = 0;
    for (;;) {
      const left = index * 2 + 1;
      const right = left + 1;
      let smallest = index;
      if (left < items.length && this.compare(items[left] as T, items[smallest] as T) < 0) smallest = left;
      if (right < items.length && this.compare(items[right] as T, items[smallest] as T) < 0) smallest = right;
      if (smallest === index) break;
      [items[index], items[smallest]] = [items[smallest] as T, items[index] as T];
      index = smallest;
    }
    return first;
  }

  /** Restores the order after items' keys changed in place. */
  reorder(): void {
    const items = this.items.splice(0);
    for (const item of items) this.push(item);
  }

  /** Removes every item. */
  clear(): void {
    this.items.length = 0;
  }
}
