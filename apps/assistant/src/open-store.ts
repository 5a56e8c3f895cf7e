import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { LunationError, type LunationStore } from '@lunation/contract';

export type StoreKind = 'memory' | 'sqlite' | 'redis' | 'postgres';

export interface OpenStoreOptions {
  kind: StoreKind;
  /** The SQLite database file. */
  sqlitePath: string;
  /** The Redis server, e.g. `redis://127.0.0.1:6379`. */
  redisUrl: string;
  /** The PostgreSQL server, e.g. `postgres://user:password@127.0.0.1:5432/app`. */
  postgresUrl?: string | undefined;
  /** The PostgreSQL schema of the store's tables. @default 'lunation_assistant' */
  postgresSchema?: string;
  /** How long to wait for Redis or PostgreSQL to answer before giving up. @default 5000 */
  connectTimeoutMs?: number;
}

/**
 * Opens the chosen store and checks that it answers. Each backend's package is loaded only when chosen, so
 * the SQLite native module and the Redis client cost nothing when unused.
 */
export async function openStore(options: OpenStoreOptions): Promise<LunationStore> {
  switch (options.kind) {
    case 'memory': {
      const { MemoryStore } = await import('@lunation/store-memory');
      return new MemoryStore();
    }
    case 'sqlite':
      return openSqlite(options.sqlitePath);
    case 'redis':
      return openRedis(options.redisUrl, options.connectTimeoutMs ?? 5_000);
    case 'postgres':
      return openPostgres(
        options.postgresUrl ?? '',
        options.postgresSchema ?? 'lunation_assistant',
        options.connectTimeoutMs ?? 5_000,
      );
  }
}

async function openSqlite(path: string): Promise<LunationStore> {
  const { SqliteStore } = await import('@lunation/store-sqlite');
  try {
    await mkdir(dirname(path), { recursive: true });
    return await SqliteStore.open({ path });
  } catch (error) {
    throw new LunationError(
      'store-unavailable',
      `Cannot open the SQLite database "${path}": ${messageOf(error)}`,
      { cause: error },
    );
  }
}

async function openRedis(url: string, timeoutMs: number): Promise<LunationStore> {
  const { RedisStore } = await import('@lunation/store-redis');
  const store = new RedisStore({ url, keyPrefix: 'lunation:assistant:' });
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${timeoutMs} ms; check that the server is running`)),
        timeoutMs,
      );
    });
    await Promise.race([store.listThreads({ limit: 1 }), timeout]);
    return store;
  } catch (error) {
    await store.close().catch(() => {});
    throw new LunationError('store-unavailable', `Cannot use Redis at ${url}: ${messageOf(error)}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
  }
}

/** Opens the store in `schema` (created and migrated if needed). */
async function openPostgres(url: string, schema: string, timeoutMs: number): Promise<LunationStore> {
  const { PostgresStore } = await import('@lunation/store-postgres');
  let store: InstanceType<typeof PostgresStore> | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    store = new PostgresStore({ connectionString: url, schema });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${timeoutMs} ms; check that the server is running`)),
        timeoutMs,
      );
    });
    await Promise.race([store.init(), timeout]);
    return store;
  } catch (error) {
    await store?.close().catch(() => {});
    throw new LunationError(
      'store-unavailable',
      `Cannot use PostgreSQL at ${redactPassword(url)}: ${messageOf(error)}`,
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

/** `url` with its password replaced by `***`, for messages and banners. */
export function redactPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/:[^:@/]*@/, ':***@');
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
