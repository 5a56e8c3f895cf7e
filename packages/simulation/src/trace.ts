import { createHash, type Hash } from 'node:crypto';

/**
 * Ids the runtime still makes from real randomness (a per-process UUID plus a counter), and bare 32-digit hex
 * ids: the trace names each by the order it first appeared in (`#1`, `#2`, ...), so a trace depends on what
 * happened, not on which random id it happened to.
 */
const randomId =
  /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?:-[0-9a-z]+)?|\b[0-9a-f]{32}\b/g;

/** How many characters of lines the hasher is given at once. */
const hashBatch = 64 * 1024;

/** Options of {@link Trace}. */
export interface TraceOptions {
  /** Keep every line (for printing a replayed seed); otherwise only the last `tail` lines. @default false */
  keepAll?: boolean;
  /** How many of the latest lines to keep when not `keepAll`. @default 200 */
  tail?: number;
  /** Record nothing, only count the lines (for runs that read neither the lines nor the hash). @default false */
  off?: boolean;
}

/**
 * What a simulation did, line by line: the operations and timers the scheduler ran, in order, with their
 * virtual times and outcomes. Its SHA-256 `hash` is the determinism check: the same seed gives the same hash.
 */
export class Trace {
  private readonly hasher: Hash = createHash('sha256');
  private readonly kept: string[] = [];
  private readonly aliases = new Map<string, string>();
  private readonly keepAll: boolean;
  private readonly tail: number;
  private digest: string | undefined;
  /** Lines recorded but not yet given to the hasher. */
  private pending = '';
  /** How many lines were recorded. */
  length = 0;
  /** False when the trace is off: a caller may then skip making its lines. */
  readonly recording: boolean;

  constructor(options: TraceOptions = {}) {
    this.keepAll = options.keepAll ?? false;
    this.tail = options.tail ?? 200;
    this.recording = !(options.off ?? false);
  }

  /** Appends a line (random runtime ids in it are replaced by their first-seen aliases). */
  record(line: string): void {
    if (this.digest !== undefined) throw new Error('This trace is finished (its hash was read)');
    this.length++;
    if (!this.recording) return;
    const text = line.replace(randomId, (id) => {
      let alias = this.aliases.get(id);
      if (alias === undefined) {
        alias = `#${this.aliases.size + 1}`;
        this.aliases.set(id, alias);
      }
      return alias;
    });
    // The hash takes the lines in batches (one native call per batch, not two per line): the same bytes in the same
    // order, so the same digest.
    this.pending += `${text}\n`;
    if (this.pending.length >= hashBatch) this.flush();
    this.kept.push(text);
    if (!this.keepAll && this.kept.length > this.tail * 2) this.kept.splice(0, this.kept.length - this.tail);
  }

  /** The kept lines: all of them with `keepAll`, else the latest `tail`. */
  lines(): string[] {
    return this.keepAll ? this.kept.slice() : this.kept.slice(-this.tail);
  }

  /** The SHA-256 of every line recorded, in hex; no line can be recorded after it was read. */
  hash(): string {
    if (!this.recording) throw new Error('This trace is off: it recorded no line to hash');
    if (this.digest === undefined) {
      this.flush();
      this.digest = this.hasher.digest('hex');
    }
    return this.digest;
  }

  private flush(): void {
    this.hasher.update(this.pending);
    this.pending = '';
  }
}
