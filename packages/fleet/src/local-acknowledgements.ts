import type { ThreadSlot } from './local-thread-slot.js';

interface Acknowledgement {
  slot: ThreadSlot;
  id: string;
  at: number;
}

/**
 * Acknowledged submission ids in acknowledgement order, so that each is forgotten once the dedupe window passed
 * (a submission with a forgotten id counts as new again), and a thread with nothing left is forgotten with it.
 */
export class LocalAcknowledgements {
  private readonly list: Acknowledgement[] = [];
  private head = 0;

  constructor(private readonly threads: Map<string, ThreadSlot>) {}

  /** Marks `id` acknowledged on its thread at `now`. */
  record(slot: ThreadSlot, id: string, now: number): void {
    slot.acknowledged.set(id, now);
    this.list.push({ slot, id, at: now });
  }

  /** Forgets the ids acknowledged before the window that ends at `now`. */
  forget(now: number, windowMs: number): void {
    const horizon = now - windowMs;
    let index = this.head;
    while (index < this.list.length) {
      const { slot, id, at } = this.list[index] as Acknowledgement;
      if (at > horizon) break;
      if (slot.acknowledged.get(id) === at) slot.acknowledged.delete(id);
      if (slot.state === 'idle' && slot.entries.length === 0 && slot.acknowledged.size === 0) {
        if (this.threads.get(slot.threadId) === slot) this.threads.delete(slot.threadId);
      }
      index++;
    }
    if (index === this.head) return;
    if (index * 2 > this.list.length) {
      this.list.splice(0, index);
      this.head = 0;
    } else this.head = index;
  }
}
