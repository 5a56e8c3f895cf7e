import type { DeadLetter, DispatchDepth, ResourceDepth } from '@lunation/contract';
import type { ThreadSlot } from './local-thread-slot.js';

/** The counters of a local dispatch backend: per tenant and in total, as `depth()` reports them. */
export class LocalQueueFigures {
  private readonly resources = new Map<string, ResourceDepth>();
  pending = 0;
  dead = 0;
  completed = 0;
  failed = 0;

  /** The figures of one tenant (created on first use). */
  resource(resourceId: string): ResourceDepth {
    let figures = this.resources.get(resourceId);
    if (figures === undefined) {
      figures = { pending: 0, active: 0, deadLettered: 0 };
      this.resources.set(resourceId, figures);
    }
    return figures;
  }

  /** Counts `delta` threads claimed (or released) for the slot's tenant, if it has one. */
  active(slot: ThreadSlot, delta: 1 | -1): void {
    if (slot.resourceId !== undefined) this.resource(slot.resourceId).active += delta;
  }

  /** The figures with the line's counts beside them. */
  depth(line: { waiting: number; active: number; delayed: number }): DispatchDepth {
    const byResource: Record<string, ResourceDepth> = {};
    for (const [resourceId, figures] of this.resources) {
      if (figures.pending > 0 || figures.active > 0 || figures.deadLettered > 0) {
        byResource[resourceId] = { ...figures };
      }
    }
    return {
      ...line,
      deadLettered: this.dead,
      pending: this.pending,
      completed: this.completed,
      failed: this.failed,
      byResource,
    };
  }
}

/** The dead-lettered threads among `slots`, oldest first, at most `limit`. */
export function deadLettersOf(slots: Iterable<ThreadSlot>, limit: number): DeadLetter[] {
  const letters: DeadLetter[] = [];
  for (const slot of slots) {
    if (slot.dead === undefined) continue;
    letters.push({
      threadId: slot.threadId,
      ...(slot.resourceId === undefined ? {} : { resourceId: slot.resourceId }),
      attempts: slot.dead.attempts,
      error: slot.dead.error,
      deadLetteredAt: slot.dead.at,
      pending: slot.entries.length,
    });
  }
  return letters.sort((a, b) => a.deadLetteredAt - b.deadLetteredAt).slice(0, limit);
}
