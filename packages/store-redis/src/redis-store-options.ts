import type { Clock } from '@lunation/contract';

/** The part of an ioredis client the store uses: every call is one Lua script. */
export interface RedisClient {
  /** Runs a script the server knows by its SHA1. */
  evalsha(sha1: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Runs a script, sending its source. */
  eval(script: string, numberOfKeys: number, ...args: (string | number)[]): Promise<unknown>;
  readonly options?: { keyPrefix?: string | undefined };
}

interface RedisStoreCommonOptions {
  /** Prepended to every key, so several stores (or apps) can share one database. @default 'lunation:' */
  keyPrefix?: string;
  /**
   * Where the store reads the times it records (thread, run and tool execution timestamps; lease expiries are the
   * Redis server's `TIME`); a simulation passes a virtual clock. @default systemClock
   */
  clock?: Clock;
}

/** A store that opens (and closes) its own connection to `url`. */
export interface RedisStoreUrlOptions extends RedisStoreCommonOptions {
  /** Where to connect; the store opens and closes its own connection. @default 'redis://127.0.0.1:6379' */
  url?: string;
}

/** A store on a client you own (left open by `close()`). */
export interface RedisStoreClientOptions extends RedisStoreCommonOptions {
  /** An ioredis client (without its own `keyPrefix`), left open by `close()`. */
  client: RedisClient;
}

/** Options of {@link RedisStore}: a URL or a client, plus the common settings. */
export type RedisStoreOptions = RedisStoreUrlOptions | RedisStoreClientOptions;
