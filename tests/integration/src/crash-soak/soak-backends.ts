import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { PostgresStore } from '@lunation/store-postgres';
import { Redis } from 'ioredis';
import type { StoreConnection } from '../../fixtures/store-connection.js';

/**
 * A store the soak runs against. Adding one: a case in `StoreConnection` / `openStore`
 * (fixtures/store-connection.ts) and an entry here.
 */
export interface SoakBackend {
  name: string;
  /** Fails with a clear message when the backend cannot be reached: the soak never skips. */
  ensureReachable(): Promise<void>;
  /** Where one batch keeps its data: fresh and empty, shared by no one else. */
  connect(label: string, directory: string): StoreConnection;
  /** Removes everything the batch wrote. */
  cleanup(connection: StoreConnection): Promise<void>;
}

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function withRedis<T>(work: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(redisUrl, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    retryStrategy: () => null,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return await work(client);
  } finally {
    client.disconnect();
  }
}

export const soakBackends: SoakBackend[] = [
  {
    name: 'sqlite',
    ensureReachable: async () => {},
    connect: (label, directory) => ({ store: 'sqlite', path: join(directory, `${label}.sqlite`) }),
    cleanup: async (connection) => {
      if (connection.store !== 'sqlite') return;
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${connection.path}${suffix}`, { force: true });
    },
  },
  {
    name: 'redis',
    ensureReachable: async () => {
      try {
        await withRedis((client) => client.ping());
      } catch (error) {
        throw new Error(
          `The crash soak needs Redis at ${redisUrl} (start redis-server, or set REDIS_URL): ${String(error)}`,
        );
      }
    },
    connect: (label) => ({
      store: 'redis',
      url: redisUrl,
      keyPrefix: `lunation-soak:${process.pid}:${label}:`,
    }),
    cleanup: async (connection) => {
      if (connection.store !== 'redis') return;
      await withRedis(async (client) => {
        let cursor = '0';
        do {
          const [next, keys] = await client.scan(cursor, 'MATCH', `${connection.keyPrefix}*`, 'COUNT', 500);
          cursor = next;
          if (keys.length > 0) await client.unlink(...keys);
        } while (cursor !== '0');
      });
    },
  },
  {
    name: 'postgres',
    ensureReachable: async () => {
      const probe = new PostgresStore({
        connectionString: postgresUrl,
        schema: `lunation_soak_probe_${process.pid}`,
      });
      try {
        await probe.dropSchema();
      } catch (error) {
        throw new Error(
          `The crash soak needs PostgreSQL at ${postgresUrl} (start it, or set POSTGRES_URL): ${String(error)}`,
        );
      }
    },
    connect: (label) => ({
      store: 'postgres',
      url: postgresUrl,
      schema: `lunation_soak_${process.pid}_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`.slice(0, 60),
    }),
    cleanup: async (connection) => {
      if (connection.store !== 'postgres') return;
      await new PostgresStore({ connectionString: connection.url, schema: connection.schema }).dropSchema();
    },
  },
];
