import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

/** The Redis the tests use; they fail (never skip) when it is not reachable. */
export const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A connection for test setup and inspection, failing fast with a clear message when Redis is down. */
export async function connectTestRedis(): Promise<Redis> {
  const client = new Redis(redisUrl, {
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
      `The dispatch-bullmq tests need a Redis server at ${redisUrl} (start redis-server, or set REDIS_URL): ${String(connectionError ?? error)}`,
    );
  }
  return client;
}

/**
 * Connects once for a test file and fails every test (rather than skipping them) when Redis is down.
 * Call `connected()` in a `beforeEach`.
 */
export function sharedTestRedis(): { connect(): Promise<void>; connected(): Redis } {
  let client: Redis | undefined;
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
}

/** A key prefix no other test uses. */
export function uniquePrefix(): string {
  return `lunation-test:${randomBytes(6).toString('hex')}:`;
}

/** Every key under `prefix`. */
export async function keysWithPrefix(client: Redis, prefix: string): Promise<string[]> {
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
}

/** Deletes every key under `prefix`. */
export async function deleteKeysWithPrefix(client: Redis, prefix: string): Promise<void> {
  const keys = await keysWithPrefix(client, prefix);
  for (let index = 0; index < keys.length; index += 500) await client.del(...keys.slice(index, index + 500));
}
