import type { Clock } from '@lunation/contract';
import type { Redis } from 'ioredis';

interface StreamWait {
  /** Wake when the stream has an entry after `0-<after>`. */
  after: number;
  wake(): void;
}

/**
 * Waits for new entries on many run streams over ONE blocking connection: a single `XREAD BLOCK` covers every
 * stream someone waits on. A wait on a new stream interrupts the read (`CLIENT UNBLOCK`) so the next read covers
 * it; the interrupt is repeated until the reader has restarted, in case it arrived before the read blocked.
 */
export class StreamWaiter {
  private readonly waits = new Map<string, Set<StreamWait>>();
  private connection: Redis | undefined;
  private connectionId: string | undefined;
  private generation = 0;
  private readGeneration = -1;
  private reading = false;
  private running = false;
  private closed = false;

  private readonly blockMs: number;
  private readonly clock: Clock;

  /** `blockMs`: how long one blocking read lasts; `clock`: the pauses after a failure and between unblocks. */
  constructor(
    private readonly control: Redis,
    settings: { blockMs: number; clock: Clock },
    private readonly reportError: (error: unknown) => void,
  ) {
    this.blockMs = settings.blockMs;
    this.clock = settings.clock;
  }

  /** Resolves once `key` has an entry after `0-<after>`, or the signal aborts, or the waiter closes. */
  wait(key: string, after: number, signal: AbortSignal): Promise<void> {
    if (this.closed || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wait: StreamWait = {
        after,
        wake: () => {
          signal.removeEventListener('abort', wait.wake);
          const set = this.waits.get(key);
          if (set?.delete(wait) && set.size === 0) this.waits.delete(key);
          resolve();
        },
      };
      signal.addEventListener('abort', wait.wake, { once: true });
      let set = this.waits.get(key);
      if (set === undefined) {
        set = new Set();
        this.waits.set(key, set);
      }
      set.add(wait);
      this.generation++;
      if (!this.running) void this.run();
      else this.interrupt();
    });
  }

  close(): void {
    this.closed = true;
    for (const set of [...this.waits.values()]) for (const wait of [...set]) wait.wake();
    this.connection?.disconnect();
  }

  private async run(): Promise<void> {
    this.running = true;
    let failed = false;
    try {
      while (this.waits.size > 0 && !this.closed) {
        const connection = this.open();
        if (this.connectionId === undefined)
          this.connectionId = String(await connection.call('CLIENT', 'ID'));
        const generation = this.generation;
        const keys = [...this.waits.keys()];
        const ids = keys.map(
          (key) => `0-${Math.min(...[...(this.waits.get(key) ?? [])].map((wait) => wait.after))}`,
        );
        this.readGeneration = generation;
        this.reading = true;
        let reply: unknown;
        try {
          reply = await connection.call('XREAD', 'BLOCK', this.blockMs, 'STREAMS', ...keys, ...ids);
        } catch (error) {
          if (this.closed) return;
          this.reportError(error);
          await this.clock.sleep(100);
          continue;
        } finally {
          this.reading = false;
        }
        for (const [key, entries] of (reply ?? []) as [string, [string, string[]][]][]) {
          const last = Number(entries.at(-1)?.[0].slice(2) ?? 0);
          for (const wait of [...(this.waits.get(key) ?? [])]) if (wait.after < last) wait.wake();
        }
      }
    } catch (error) {
      failed = true;
      this.reportError(error);
    } finally {
      this.running = false;
      // A wait added just as the loop ended, or a failure to connect: go on (after a pause when it failed).
      if (this.waits.size > 0 && !this.closed) {
        if (failed) this.clock.setTimeout(() => void this.run(), 250).unref();
        else void this.run();
      }
    }
  }

  private open(): Redis {
    if (this.connection === undefined) {
      const connection = this.control.duplicate({ maxRetriesPerRequest: null });
      connection.on('error', this.reportError);
      // A new connection has a new client id: fetch it before the next read.
      connection.on('close', () => {
        this.connectionId = undefined;
      });
      this.connection = connection;
    }
    return this.connection;
  }

  /** Restarts a blocked read so that it covers the streams waited on since. */
  private interrupt(): void {
    if (!this.reading || this.readGeneration >= this.generation || this.connectionId === undefined) return;
    this.control.call('CLIENT', 'UNBLOCK', this.connectionId).catch(this.reportError);
    this.clock.setTimeout(() => this.interrupt(), 50).unref();
  }
}
