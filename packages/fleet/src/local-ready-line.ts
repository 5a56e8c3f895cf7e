/** What the line needs of a thread: its state and, while delayed, when it becomes claimable. */
export interface LineSlot {
  state: 'idle' | 'ready' | 'delayed' | 'active' | 'dead';
  readyAt: number;
}

/**
 * The order in which threads become claimable: ready threads in FIFO order (a thread whose claim expired goes
 * first), delayed ones sorted by due time and moved to the end of the line once due. An array with a moving head,
 * so that taking the first thread costs no shift.
 */
export class ReadyLine<T extends LineSlot> {
  private ready: T[] = [];
  private head = 0;
  private readonly delayed: T[] = [];

  /** Threads ready now. */
  get readyCount(): number {
    return this.ready.length - this.head;
  }

  /** Threads waiting for their due time. */
  get delayedCount(): number {
    return this.delayed.length;
  }

  /** When the first delayed thread falls due (Infinity when none). */
  get nextDue(): number {
    return this.delayed[0]?.readyAt ?? Number.POSITIVE_INFINITY;
  }

  /** Puts a thread at the end of the line. */
  push(slot: T): void {
    slot.state = 'ready';
    this.ready.push(slot);
  }

  /** Puts a thread at the front of the line. */
  pushFront(slot: T): void {
    slot.state = 'ready';
    if (this.head > 0) this.ready[--this.head] = slot;
    else this.ready.unshift(slot);
  }

  /** Keeps a thread back until `readyAt`. */
  delay(slot: T, readyAt: number): void {
    slot.state = 'delayed';
    slot.readyAt = readyAt;
    let low = 0;
    let high = this.delayed.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((this.delayed[middle] as T).readyAt <= readyAt) low = middle + 1;
      else high = middle;
    }
    this.delayed.splice(low, 0, slot);
  }

  /** Moves the delayed threads that are due to the end of the line. */
  promoteDue(now: number): void {
    let due = 0;
    while (due < this.delayed.length && (this.delayed[due] as T).readyAt <= now) {
      this.push(this.delayed[due] as T);
      due++;
    }
    if (due > 0) this.delayed.splice(0, due);
  }

  /** Takes the first ready thread that `accept` accepts (the others keep their places), or undefined. */
  take(accept: (slot: T) => boolean): T | undefined {
    for (let index = this.head; index < this.ready.length; index++) {
      const slot = this.ready[index] as T;
      if (!accept(slot)) continue;
      if (index === this.head) {
        this.ready[this.head++] = undefined as unknown as T;
        if (this.head > 1024 && this.head * 2 > this.ready.length) {
          this.ready = this.ready.slice(this.head);
          this.head = 0;
        }
      } else {
        this.ready.splice(index, 1);
      }
      return slot;
    }
    return undefined;
  }
}
