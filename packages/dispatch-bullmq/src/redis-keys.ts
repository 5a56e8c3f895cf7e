/** `%` and `:` escaped (`%25`, `%3A`), so that no id can spell another record's key or BullMQ job id. */
export function escapeId(id: string): string {
  return id.replace(/[%:]/g, (character) => (character === '%' ? '%25' : '%3A'));
}

/**
 * The BullMQ job id of a thread: `t.` and the escaped thread id. BullMQ rejects `:` in custom ids and ids made
 * only of digits; the escape and the prefix rule both out, and keep the mapping one-to-one.
 */
export function jobIdOf(threadId: string): string {
  return `t.${escapeId(threadId)}`;
}

/** Every Redis key of one dispatcher namespace (`prefix`), BullMQ's included. */
export class DispatchKeys {
  /** BullMQ's own `prefix` option: its keys are `<prefix>bull:<queue>:...`. */
  readonly bullPrefix: string;
  /** Global counter ordering inbox entries. */
  readonly sequence: string;
  /** Threads with pending submissions, scored by their last submission time (for the orphan sweep). */
  readonly pendingThreads: string;
  /** Counters: `pending`, `completed`, `failed`, and per tenant `pending:<u>`, `dead:<u>`. */
  readonly stats: string;
  /** Tenant → the key of its active-claims set. */
  readonly activeTenants: string;
  /** Pub/sub channel of cancel requests. */
  readonly cancelChannel: string;

  constructor(readonly prefix: string) {
    this.bullPrefix = `${prefix}bull`;
    this.sequence = `${prefix}inbox-sequence`;
    this.pendingThreads = `${prefix}pending-threads`;
    this.stats = `${prefix}stats`;
    this.activeTenants = `${prefix}active-tenants`;
    this.cancelChannel = `${prefix}cancel`;
  }

  /** A thread's inbox: submission ids scored by submission order. */
  inbox(threadId: string): string {
    return `${this.prefix}inbox:${escapeId(threadId)}`;
  }

  /** A thread's inbox entries as JSON, by submission id. */
  entries(threadId: string): string {
    return `${this.inbox(threadId)}:entries`;
  }

  /** The tenant of each inbox entry that has one, by submission id. */
  tenants(threadId: string): string {
    return `${this.inbox(threadId)}:tenants`;
  }

  /** Acknowledged submission ids with their time, for the dedupe window. */
  seen(threadId: string): string {
    return `${this.inbox(threadId)}:seen`;
  }

  /** A tenant's active claims: thread ids scored by lock expiry. */
  active(resourceId: string | undefined): string {
    return `${this.prefix}active:${resourceId === undefined ? '' : escapeId(resourceId)}`;
  }

  /** A thread's cancel requests (a hash: one field per run named). */
  cancel(threadId: string): string {
    return `${this.prefix}cancel:${escapeId(threadId)}`;
  }

  /** A run's event stream. */
  events(runId: string): string {
    return `${this.prefix}events:${escapeId(runId)}`;
  }

  /** A run's log counters: `seq` (the last id) and `end` (the id of the end mark). */
  eventsMeta(runId: string): string {
    return `${this.events(runId)}:meta`;
  }
}
