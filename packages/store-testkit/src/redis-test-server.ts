import { randomBytes } from 'node:crypto';

/** The part of an ioredis `Redis` the fixture uses (pass ioredis' `Redis` itself). */
export interface TestRedisClient {
  /** Listens for connection errors. */
  on(event: 'error', listener: (error: unknown) => void): unknown;
  /** Connects (the fixture creates clients with `lazyConnect`). */
  connect(): Promise<unknown>;
  /** Checks the connection. */
  ping(): Promise<unknown>;
  /** Drops the connection at once. */
  disconnect(): void;
  /** One `SCAN` step over the keys matching a pattern. */
  scan(
    cursor: string,
    match: 'MATCH',
    pattern: string,
    count: 'COUNT',
    size: number,
  ): Promise<[cursor: string, keys: string[]]>;
  /** Deletes keys. */
  del(...keys: string[]): Promise<unknown>;
}

/** How {@link redisTestServer} connects: ioredis' `Redis` constructor, or any with the same options. */
export type TestRedisClientClass<Client extends TestRedisClient> = new (
  url: string,
  options: {
    lazyConnect: boolean;
    maxRetriesPerRequest: number;
    connectTimeout: number;
    retryStrategy: () => null;
  },
) => Client;

/** Options of {@link redisTestServer}. */
export interface RedisTestServerOptions<Client extends TestRedisClient> {
  /** The client class, e.g. ioredis' `Redis` (the kit does not depend on ioredis). */
  Redis: TestRedisClientClass<Client>;
  /** Who needs the server, for the message when it is down, e.g. `store-redis`. */
  label: string;
}

/** What {@link redisTestServer} gives a package's tests. */
export interface RedisTestServer<Client extends TestRedisClient> {
  /** The Redis the tests use (`REDIS_URL`, else the local one); never skipped when down. */
  readonly redisUrl: string;
  /** A connection for test setup and inspection, failing fast with a clear message when Redis is down. */
  connectTestRedis(): Promise<Client>;
  /**
   * Connects once for a test file and fails every test (rather than skipping them) when Redis is down. Call
   * `connected()` in a `beforeEach`.
   */
  sharedTestRedis(): {
    /** Connects, remembering the failure when the server is down (call it in `beforeAll`). */
    connect(): Promise<void>;
    /** The client; throws the connection failure when the server was down. */
    connected(): Client;
  };
  /** A key prefix no other test uses. */
  uniquePrefix(): string;
  /** Every key under `prefix`, sorted. */
  keysWithPrefix(client: TestRedisClient, prefix: string): Promise<string[]>;
  /** Deletes every key under `prefix`. */
  deleteKeysWithPrefix(client: TestRedisClient, prefix: string): Promise<void>;
}

/**
 * The Redis fixture of a package's tests (store-redis, dispatch-bullmq, a third-party store): a server URL,
 * unique key prefixes and connections that fail tests (never skip them) when the server is down. Test-only;
 * `@lunation/store-testkit/redis`.
 */
export function redisTestServer<Client extends TestRedisClient>(
  options: RedisTestServerOptions<Client>,
): RedisTestServer<Client> {
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const connectTestRedis = async (): Promise<Client> => {
    const client = new options.Redis(redisUrl, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      connectTimeout: 2_000,
      retryStrategy: () => null,
    });
    let connectionError: unknown;
    client.on('error', (error: unknown) => {
      connectionError = error;
    });
    try {
      await client.connect();
      await client.ping();
    } catch (error) {
      client.disconnect();
      throw new Error(
        `The ${options.label} tests need a Redis server at ${redisUrl} (start redis-server, or set REDIS_URL): ${String(connectionError ?? error)}`,
      );
    }
    return client;
  };
  const keysWithPrefix = async (client: TestRedisClient, prefix: string): Promise<string[]> => {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await client.scan(
        cursor,
        'MATCH',
        `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`,
        'COUNT',
        1000,
      );
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return keys.sort();
  };
  return {
    redisUrl,
    connectTestRedis,
    sharedTestRedis() {
      let client: Client | undefined;
      let failure: unknown;
      return {
        async connect() {
          try {
            client = await connectTestRedis();
          } catch (error) {
            failure = error;
          }
        },
        connected() {
          if (client === undefined) throw failure;
          return client;
        },
      };
    },
    uniquePrefix: () => `lunation-test:${randomBytes(6).toString('hex')}:`,
    keysWithPrefix,
    async deleteKeysWithPrefix(client, prefix) {
      const keys = await keysWithPrefix(client, prefix);
      for (let index = 0; index < keys.length; index += 500)
        await client.del(...keys.slice(index, index + 500));
    },
  };
}
