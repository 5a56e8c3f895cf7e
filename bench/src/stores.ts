import { join } from 'node:path';
import type { LunationStore } from '@lunation/contract';
import { MemoryStore } from '@lunation/store-memory';
import { SqliteStore } from '@lunation/store-sqlite';
import type { StoreKind } from './harness.js';
import { Unavailable } from './harness.js';

export interface StoreSettings {
  workDir: string;
  redisUrl: string;
  redisKeyPrefix: string;
  /** SQLite file name inside workDir. @default 'lunation.sqlite' */
  fileName?: string;
}

type RedisStoreConstructor = new (options: { url: string; keyPrefix: string }) => LunationStore;

/** Opens a Lunation store of the given kind; throws `Unavailable` when it cannot be used here. */
export async function openStore(
  kind: StoreKind,
  settings: StoreSettings,
): Promise<LunationStore | undefined> {
  switch (kind) {
    case 'none':
      return undefined;
    case 'memory':
      return new MemoryStore();
    case 'sqlite': {
      const store = new SqliteStore({ path: join(settings.workDir, settings.fileName ?? 'lunation.sqlite') });
      await store.init();
      return store;
    }
    // PostgreSQL's and Redis's clients load only when asked for (a process that needs neither starts faster).
    case 'postgres':
    case 'postgres-async':
      return (await import('./postgres.js')).openPostgresStore(kind, settings.redisKeyPrefix);
    case 'redis': {
      const RedisStore = await loadRedisStore();
      await (await import('./redis.js')).checkRedis(settings.redisUrl);
      let store: LunationStore;
      try {
        store = new RedisStore({ url: settings.redisUrl, keyPrefix: settings.redisKeyPrefix });
      } catch (error) {
        throw new Unavailable(`new RedisStore({ url, keyPrefix }) failed: ${(error as Error).message}`);
      }
      const init = (store as { init?: () => Promise<void> }).init;
      if (typeof init === 'function') await init.call(store);
      return store;
    }
  }
}

async function loadRedisStore(): Promise<RedisStoreConstructor> {
  let module: Record<string, unknown>;
  try {
    module = (await import('@lunation/store-redis')) as Record<string, unknown>;
  } catch (error) {
    throw new Unavailable(`@lunation/store-redis does not load: ${(error as Error).message}`);
  }
  const RedisStore = module.RedisStore;
  if (typeof RedisStore !== 'function')
    throw new Unavailable('@lunation/store-redis exports no RedisStore yet');
  return RedisStore as RedisStoreConstructor;
}
