import type { RunEventRecord } from '@lunation/contract';
import type { LocalRunEvents } from './local-run-events.js';

const done: IteratorReturnResult<undefined> = { value: undefined, done: true };
const batchSize = 256;

/**
 * Follows one run's log: yields every record after a position, reading in batches and waiting (one promise per
 * wait, not per event) when caught up; ends at the log's end mark, on abort or on `close()`.
 */
export class LocalEventSubscription implements AsyncIterableIterator<RunEventRecord> {
  private position: number;
  private batch: RunEventRecord[] = [];
  private index = 0;
  private finished = false;
  private waiting: Promise<IteratorResult<RunEventRecord>> | undefined;
  private wake: (() => void) | undefined;
  private readonly onAbort = () => this.close();
  private readonly signal: AbortSignal;

  constructor(
    private readonly events: LocalRunEvents,
    private readonly runId: string,
    from: { after: number; signal: AbortSignal },
    private readonly onClose: (subscription: LocalEventSubscription) => void,
  ) {
    this.position = from.after;
    this.signal = from.signal;
    const { signal } = from;
    if (!signal.aborted) signal.addEventListener('abort', this.onAbort, { once: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<RunEventRecord>> {
    if (this.waiting !== undefined) return this.waiting.then(() => this.next());
    return Promise.resolve(this.step());
  }

  return(): Promise<IteratorResult<RunEventRecord>> {
    this.close();
    return Promise.resolve(done);
  }

  /** Ends the subscription; a waiting `next()` resolves as done. */
  close(): void {
    if (this.finished) return;
    this.finish();
    this.wake?.();
  }

  private step(): IteratorResult<RunEventRecord> | Promise<IteratorResult<RunEventRecord>> {
    if (this.index < this.batch.length) {
      const record = this.batch[this.index++] as RunEventRecord;
      this.position = Number(record.id);
      return { value: record, done: false };
    }
    if (this.finished) return done;
    if (this.signal.aborted) {
      this.finish();
      return done;
    }
    const page = this.events.read(this.runId, this.position, batchSize);
    if (page.events.length > 0) {
      this.batch = page.events;
      this.index = 0;
      return this.step();
    }
    if (page.ended) {
      this.finish();
      return done;
    }
    this.waiting = new Promise<void>((resolve) => {
      this.wake = () => {
        this.events.offChange(this.runId, waker);
        this.wake = undefined;
        this.waiting = undefined;
        resolve();
      };
      const waker = this.wake;
      this.events.onChange(this.runId, waker);
    }).then(() => this.step());
    return this.waiting;
  }

  private finish(): void {
    this.finished = true;
    this.batch = [];
    this.index = 0;
    this.signal.removeEventListener('abort', this.onAbort);
    this.onClose(this);
  }
}
