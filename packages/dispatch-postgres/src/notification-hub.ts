import type { Clock, ClockTimer } from '@lunation/contract';
import { quoteIdentifier } from '@lunation/contract/postgres-utils';
import type {
  PostgresDispatcherClient,
  PostgresDispatcherPool,
  PostgresNotification,
} from './postgres-connection.js';

/** Called with a notification's payload, or with `undefined` when notifications may have been missed. */
export type NotificationHandler = (payload: string | undefined) => void;

/** How long the hub waits before reconnecting its listening connection, at first and at most. */
const firstRetryMs = 100;
const longestRetryMs = 5_000;

/**
 * The dispatcher's one listening connection, checked out of the pool while anything listens: LISTENs a channel
 * while it has handlers, and hands each notification to them. When the connection is lost it tells every
 * handler (`undefined`: something may have been missed), reconnects with backoff, LISTENs again and tells them
 * once more, so each re-reads what it waits for.
 */
export class NotificationHub {
  readonly #pool: PostgresDispatcherPool;
  readonly #reportError: (error: unknown) => void;
  readonly #handlers = new Map<string, Set<NotificationHandler>>();
  /** Channels LISTENed on the current connection, each with the LISTEN in flight or done. */
  readonly #listening = new Map<string, Promise<void>>();
  #client: PostgresDispatcherClient | undefined;
  #connecting: Promise<PostgresDispatcherClient> | undefined;
  /** The listening connection's statements, one after another (a pg client runs one query at a time). */
  #statements: Promise<unknown> = Promise.resolve();
  #retryMs = firstRetryMs;
  readonly #clock: Clock;
  #retryTimer: ClockTimer | undefined;
  #closed = false;

  constructor(pool: PostgresDispatcherPool, reportError: (error: unknown) => void, clock: Clock) {
    this.#pool = pool;
    this.#reportError = reportError;
    this.#clock = clock;
  }

  /** Calls `handler` for each notification on `channel`; resolves once the channel is LISTENed. */
  async listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> {
    let handlers = this.#handlers.get(channel);
    if (handlers === undefined) {
      handlers = new Set();
      this.#handlers.set(channel, handlers);
    }
    handlers.add(handler);
    try {
      await this.#listenOn(await this.#connected(), channel);
    } catch (error) {
      this.#remove(channel, handler);
      throw error;
    }
    return () => this.#unlisten(channel, handler);
  }

  /** Releases the connection; handlers are dropped. */
  close(): void {
    this.#closed = true;
    this.#clock.clearTimeout(this.#retryTimer);
    this.#handlers.clear();
    this.#listening.clear();
    const client = this.#client;
    this.#client = undefined;
    client?.removeListener('notification', this.#onNotification);
    client?.removeListener('error', this.#onError);
    client?.release(true);
  }

  #connected(): Promise<PostgresDispatcherClient> {
    if (this.#closed) return Promise.reject(new Error('Client was closed: the dispatcher is closed'));
    if (this.#client !== undefined) return Promise.resolve(this.#client);
    this.#connecting ??= (async () => {
      try {
        const client = await this.#pool.connect();
        if (this.#closed) {
          client.release(true);
          throw new Error('Client was closed: the dispatcher is closed');
        }
        client.on('notification', this.#onNotification);
        client.on('error', this.#onError);
        this.#client = client;
        this.#retryMs = firstRetryMs;
        return client;
      } finally {
        this.#connecting = undefined;
      }
    })();
    return this.#connecting;
  }

  #listenOn(client: PostgresDispatcherClient, channel: string): Promise<void> {
    let listening = this.#listening.get(channel);
    if (listening === undefined) {
      listening = this.#run(client, `LISTEN ${quoteIdentifier(channel)}`);
      this.#listening.set(channel, listening);
      listening.catch(() => this.#listening.delete(channel));
    }
    return listening;
  }

  async #unlisten(channel: string, handler: NotificationHandler): Promise<void> {
    if (!this.#remove(channel, handler)) return;
    this.#listening.delete(channel);
    const client = this.#client;
    if (client === undefined) return;
    await this.#run(client, `UNLISTEN ${quoteIdentifier(channel)}`).catch(this.#reportError);
  }

  #run(client: PostgresDispatcherClient, statement: string): Promise<void> {
    const run = this.#statements.then(() => client.query(statement)).then(() => undefined);
    this.#statements = run.catch(() => undefined);
    return run;
  }

  /** Removes a handler; true when it was the channel's last. */
  #remove(channel: string, handler: NotificationHandler): boolean {
    const handlers = this.#handlers.get(channel);
    if (handlers === undefined || !handlers.delete(handler)) return false;
    if (handlers.size > 0) return false;
    this.#handlers.delete(channel);
    return true;
  }

  readonly #onNotification = (message: PostgresNotification) => {
    const handlers = this.#handlers.get(message.channel);
    if (handlers === undefined) return;
    for (const handler of [...handlers]) this.#call(handler, message.payload ?? '');
  };

  readonly #onError = (error: Error) => {
    this.#reportError(error);
    const client = this.#client;
    this.#client = undefined;
    this.#listening.clear();
    if (client !== undefined) {
      client.removeListener('notification', this.#onNotification);
      client.removeListener('error', this.#onError);
      client.release(error);
    }
    this.#tellEveryone();
    this.#scheduleReconnect();
  };

  #scheduleReconnect(): void {
    if (this.#closed || this.#handlers.size === 0 || this.#retryTimer !== undefined) return;
    const delay = this.#retryMs;
    this.#retryMs = Math.min(longestRetryMs, this.#retryMs * 2);
    this.#retryTimer = this.#clock.setTimeout(() => {
      this.#retryTimer = undefined;
      this.#reconnect().catch((error: unknown) => {
        this.#reportError(error);
        this.#scheduleReconnect();
      });
    }, delay);
    this.#retryTimer.unref();
  }

  async #reconnect(): Promise<void> {
    if (this.#closed || this.#handlers.size === 0) return;
    const client = await this.#connected();
    await Promise.all([...this.#handlers.keys()].map((channel) => this.#listenOn(client, channel)));
    this.#tellEveryone();
  }

  #tellEveryone(): void {
    for (const handlers of [...this.#handlers.values()]) {
      for (const handler of [...handlers]) this.#call(handler, undefined);
    }
  }

  #call(handler: NotificationHandler, payload: string | undefined): void {
    try {
      handler(payload);
    } catch (error) {
      this.#reportError(error);
    }
  }
}
