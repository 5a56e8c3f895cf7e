import { createHash } from 'node:crypto';
import type { Dispatcher, LunationStore } from '@lunation/contract';
import { BullMQDispatcher } from '@lunation/dispatch-bullmq';
import { PostgresDispatcher } from '@lunation/dispatch-postgres';
import { PostgresStore } from '@lunation/store-postgres';
import { RedisStore } from '@lunation/store-redis';
import { Redis } from 'ioredis';
import pg from 'pg';

/** Where W5's fleet keeps its threads and its work: Redis + BullMQ, or PostgreSQL + pg-boss. */
export type W5Backend = 'bullmq' | 'postgres';

export const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** The PostgreSQL schemas of a fleet named by `prefix`: the store's and the dispatcher's. */
function schemas(prefix: string): { store: string; dispatch: string } {
  const hash = createHash('sha256').update(prefix).digest('hex').slice(0, 12);
  return { store: `w5_store_${hash}`, dispatch: `w5_dispatch_${hash}` };
}

/** Opens the store and the dispatcher of the fleet named by `prefix` (what every process of it shares). */
export async function openW5Backend(
  backend: W5Backend,
  prefix: string,
): Promise<{ store: LunationStore; dispatcher: Dispatcher }> {
  if (backend === 'bullmq') {
    return {
      store: new RedisStore({ url: redisUrl, keyPrefix: `${prefix}store:` }),
      dispatcher: new BullMQDispatcher({ url: redisUrl, keyPrefix: `${prefix}dispatch:` }),
    };
  }
  const names = schemas(prefix);
  return {
    store: await PostgresStore.open({ connectionString: postgresUrl, schema: names.store }),
    dispatcher: await PostgresDispatcher.open({ connectionString: postgresUrl, schema: names.dispatch }),
  };
}

/** Removes everything the fleet named by `prefix` left: its Redis keys or its PostgreSQL schemas. */
export async function cleanupW5Backend(backend: W5Backend, prefix: string): Promise<void> {
  if (backend === 'postgres') {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    try {
      const names = schemas(prefix);
      for (const schema of [names.store, names.dispatch])
        await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await client.end();
    }
    return;
  }
  const client = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
      cursor = next;
      if (keys.length > 0) await client.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}
