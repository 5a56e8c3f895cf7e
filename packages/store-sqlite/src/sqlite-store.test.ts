import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type ErrorCode, LunationError, type RunRecord, systemClock } from '@lunation/contract';
import Database from 'better-sqlite3';
import {
  CamelCasePlugin,
  Kysely,
  type KyselyPlugin,
  type LogEvent,
  ParseJSONResultsPlugin,
  SqliteDialect,
  sql,
} from 'kysely';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { latestSchemaVersion, sqliteMigrations } from './sqlite-migrations.js';
import { SqliteStore } from './sqlite-store.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-sqlite-'));
let files = 0;
const stores: SqliteStore[] = [];
const databases: Kysely<unknown>[] = [];

function databasePath(): string {
  files += 1;
  return join(directory, `test-${files}.db`);
}

async function openStore(path = databasePath()): Promise<SqliteStore> {
  const store = await SqliteStore.open({ path });
  stores.push(store);
  return store;
}

async function rejection(promise: Promise<unknown>, code: ErrorCode): Promise<LunationError> {
  const error = await promise.then(
    (value) => expect.fail(`expected a "${code}" error, got ${JSON.stringify(value)}`),
    (reason: unknown) => reason,
  );
  if (!LunationError.isInstance(error)) expect.fail(`expected a LunationError, got ${String(error)}`);
  expect(error.code, error.message).toBe(code);
  return error;
}

function runRecord(threadId: string, runId: string): RunRecord {
  const now = Date.now();
  return {
    identity: { threadId, runId, agentId: 'assistant', origin: 'user' },
    status: 'running',
    steps: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
    openTickets: [],
    state: {},
    createdAt: now,
    updatedAt: now,
  };
}

/** A Kysely instance on a new better-sqlite3 connection to `path`, configured as the README advises. */
function openKysely(
  path: string,
  options: {
    plugins?: KyselyPlugin[];
    log?: (event: LogEvent) => void;
  } = {},
): Kysely<unknown> {
  const client = new Database(path);
  client.pragma('journal_mode = WAL');
  client.pragma('busy_timeout = 5000');
  const database = new Kysely<unknown>({ dialect: new SqliteDialect({ database: client }), ...options });
  databases.push(database);
  return database;
}

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
  for (const database of databases.splice(0)) await database.destroy();
});

afterAll(() => rmSync(directory, { recursive: true, force: true }));

describe('SqliteStore connection', () => {
  it('opens the file in WAL mode', async () => {
    const path = databasePath();
    await openStore(path);
    const inspector = new Database(path, { readonly: true });
    expect(inspector.pragma('journal_mode', { simple: true })).toBe('wal');
    inspector.close();
  });

  it('waits busyTimeoutMs for the write lock of another connection, then fails with a retryable store-unavailable', async () => {
    const path = databasePath();
    const store = new SqliteStore({ path, busyTimeoutMs: 150 });
    stores.push(store);
    await store.init();
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    const started = Date.now();
    const error = await rejection(store.createThread({ id: 't1' }), 'store-unavailable');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(error.isRetryable).toBe(true);
    expect((error.cause as { code?: string }).code).toBe('SQLITE_BUSY');
    other.exec('COMMIT');
    other.close();
    expect((await store.createThread({ id: 't1' })).id).toBe('t1');
  });

  it('records the schema version and creates exactly the documented tables', async () => {
    const path = databasePath();
    const store = await openStore(path);
    expect(await store.schemaVersion()).toBe(latestSchemaVersion);
    const inspector = new Database(path, { readonly: true });
    const tables = inspector
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all();
    inspector.close();
    expect(tables).toEqual([
      'lunation_leases',
      'lunation_messages',
      'lunation_migration',
      'lunation_migration_lock',
      'lunation_runs',
      'lunation_threads',
      'lunation_tool_executions',
    ]);
  });

  it('uses an injected better-sqlite3 client as configured and leaves it open on close', async () => {
    const client = new Database(databasePath());
    client.pragma('foreign_keys = OFF');
    const store = new SqliteStore({ client });
    await store.createThread({ id: 't1', metadata: { via: 'client' } });
    expect(client.pragma('foreign_keys', { simple: true })).toBe(0);
    expect(client.pragma('journal_mode', { simple: true })).toBe('delete');
    await store.close();
    expect(client.open).toBe(true);
    expect(client.prepare('SELECT metadata FROM lunation_threads WHERE id = ?').pluck().get('t1')).toBe(
      '{"via":"client"}',
    );
    client.close();
  });

  it('migrates lazily on first use, and SqliteStore.open migrates up front', async () => {
    const path = databasePath();
    const lazy = new SqliteStore({ path });
    stores.push(lazy);
    expect(await lazy.getThread('t1')).toBeUndefined();
    expect(await lazy.schemaVersion()).toBe(latestSchemaVersion);
  });

  it('fails with store-unavailable, naming the path and keeping the cause, when the file cannot be opened', async () => {
    const path = join(directory, 'missing-directory', 'store.db');
    const store = new SqliteStore({ path });
    const error = await rejection(store.getThread('t1'), 'store-unavailable');
    expect(error.message).toContain(path);
    expect(error.cause).toBeInstanceOf(Error);
    expect(error.isRetryable).toBe(false);
    await rejection(SqliteStore.open({ path }), 'store-unavailable');
  });

  it('fails with store-unavailable once closed, and close is idempotent', async () => {
    const store = await openStore();
    await store.close();
    await store.close();
    await rejection(store.getThread('t1'), 'store-unavailable');
    await rejection(store.createThread({ id: 't1' }), 'store-unavailable');
  });
});

describe('SqliteStore on an injected Kysely instance', () => {
  it('migrates through the instance, recording the migrations in it, and leaves it usable after close', async () => {
    const database = openKysely(databasePath());
    const store = await SqliteStore.open({ database });
    expect(await store.schemaVersion()).toBe(latestSchemaVersion);
    await store.createThread({ id: 't1', metadata: { via: 'kysely' } });
    await store.close();
    await rejection(store.getThread('t1'), 'store-unavailable');

    const applied = await sql<{ name: string }>`SELECT name FROM lunation_migration ORDER BY name`.execute(
      database,
    );
    expect(applied.rows.map((row) => row.name)).toEqual(Object.keys(sqliteMigrations));
    const threads = await sql<{
      id: string;
      metadata: string;
    }>`SELECT id, metadata FROM lunation_threads`.execute(database);
    expect(threads.rows).toEqual([{ id: 't1', metadata: '{"via":"kysely"}' }]);
  });

  it("ignores the instance's plugins, so JSON columns and aliases come back as stored", async () => {
    const database = openKysely(databasePath(), {
      plugins: [new CamelCasePlugin(), new ParseJSONResultsPlugin()],
    });
    const store = await SqliteStore.open({ database });
    stores.push(store);
    const thread = await store.createThread({ id: 't1', resourceId: 'user-1', metadata: { title: 'hi' } });
    const run = runRecord('t1', 'r1');
    const message = {
      id: 'm1',
      role: 'user' as const,
      content: [{ type: 'text' as const, text: '{"a":1}' }],
    };
    await store.commit({
      threadId: 't1',
      expectedMessageCount: 0,
      messages: [message],
      run,
      threadState: { n: 1 },
    });
    expect(await store.loadCheckpoint('t1')).toEqual({
      thread: { ...thread, messageCount: 1, updatedAt: expect.any(Number) },
      messages: [{ threadId: 't1', seq: 1, message, runId: 'r1', createdAt: expect.any(Number) }],
      threadState: { n: 1 },
      latestRun: run,
    });
    expect((await store.listThreads({ resourceId: 'user-1' })).items.map((item) => item.id)).toEqual(['t1']);
  });

  it('rolls the whole commit back when a statement inside the transaction rejects it', async () => {
    const database = openKysely(databasePath());
    const store = await SqliteStore.open({ database });
    stores.push(store);
    await store.createThread({ id: 'left' });
    await store.createThread({ id: 'right' });
    await store.commit({
      threadId: 'left',
      expectedMessageCount: 0,
      messages: [],
      run: runRecord('left', 'r1'),
    });
    await rejection(
      store.commit({
        threadId: 'right',
        expectedMessageCount: 0,
        messages: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        run: runRecord('right', 'r1'),
        threadState: { written: true },
      }),
      'invalid-argument',
    );
    expect(await store.listMessages('right')).toEqual([]);
    expect(await store.getThread('right')).toMatchObject({ messageCount: 0 });
    expect(await store.getThreadState('right')).toEqual({});
    // The connection is out of the failed transaction: the next commit lands.
    expect(await store.commit({ threadId: 'right', expectedMessageCount: 0, messages: [] })).toEqual({
      messageCount: 0,
    });
  });

  it('rejects a transaction in place of the instance', async () => {
    const database = openKysely(databasePath());
    await database.transaction().execute(async (transaction) => {
      expect(() => new SqliteStore({ database: transaction })).toThrow(
        /Kysely instance \(not a transaction\)/,
      );
    });
  });

  // The README's rule, shown: a transaction run through Kysely holds the write lock across awaits, and another
  // connection of this process that writes meanwhile waits synchronously, blocking the transaction it waits for.
  it('makes a second connection of this process that writes during a store transaction fail after its busy timeout', async () => {
    const path = databasePath();
    const other = new SqliteStore({ path, busyTimeoutMs: 100 });
    stores.push(other);
    await other.init();
    let armed = false;
    let interleaved: Promise<unknown> | undefined;
    const database = openKysely(path, {
      log(event) {
        if (event.level === 'query' && event.query.sql === 'BEGIN IMMEDIATE' && armed && !interleaved) {
          interleaved = other.createThread({ id: 'from-other-connection' });
        }
      },
    });
    const store = await SqliteStore.open({ database });
    stores.push(store);
    await store.createThread({ id: 't1' });
    armed = true;
    const committed = await store.commit({
      threadId: 't1',
      expectedMessageCount: 0,
      messages: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
    expect(committed).toEqual({ messageCount: 1 });
    expect(interleaved).toBeDefined();
    const error = await rejection(interleaved!, 'store-unavailable');
    expect((error.cause as { code?: string }).code).toBe('SQLITE_BUSY');
    expect(await other.getThread('from-other-connection')).toBeUndefined();
  });
});

describe('SqliteStore across processes', () => {
  it.each([
    ['two processes', 'path'],
    ['a process with a path and one with a Kysely instance', 'kysely'],
  ])(
    'lets %s create, migrate and commit to one new file without losing or duplicating a message',
    async (_, beta) => {
      const path = databasePath();
      const worker = join(dirname(fileURLToPath(import.meta.url)), '__fixtures__', 'commit-worker.ts');
      const run = promisify(execFile);
      const perWriter = 100;
      const outputs = await Promise.all(
        ['alpha', 'beta'].map((writer) =>
          run(
            process.execPath,
            [
              '--conditions=@lunation/source',
              '--import',
              'tsx',
              worker,
              path,
              'shared',
              writer,
              String(perWriter),
              writer === 'alpha' ? 'beta' : 'alpha',
            ],
            { cwd: dirname(worker), env: { ...process.env, STORE: writer === 'beta' ? beta : 'path' } },
          ),
        ),
      );
      for (const output of outputs)
        expect(JSON.parse(output.stdout)).toEqual({ conflicts: expect.any(Number) });

      const store = await openStore(path);
      expect(await store.schemaVersion()).toBe(latestSchemaVersion);
      const records = await store.listMessages('shared');
      expect(records.map((record) => record.seq)).toEqual(
        Array.from({ length: 2 * perWriter }, (_, index) => index + 1),
      );
      for (const writer of ['alpha', 'beta']) {
        expect(
          records
            .filter((record) => record.message.id.startsWith(`${writer}-`))
            .map((record) => record.message.id),
        ).toEqual(Array.from({ length: perWriter }, (_, index) => `${writer}-${index}`));
      }
      expect((await store.getThread('shared'))?.messageCount).toBe(2 * perWriter);
    },
  );
});

describe('SqliteStore on an injected clock', () => {
  it('stamps records and judges leases by its clock', async () => {
    let now = 5_000;
    const store = await SqliteStore.open({ path: databasePath(), clock: { ...systemClock, now: () => now } });
    stores.push(store);
    expect(await store.createThread({ id: 't1' })).toMatchObject({ createdAt: 5_000, updatedAt: 5_000 });
    now = 5_010;
    expect(await store.updateThreadMetadata('t1', { a: 1 })).toMatchObject({ updatedAt: 5_010 });
    const lease = await store.acquireLease({ threadId: 't1', owner: 'a', runId: 'r1', ttlMs: 100 });
    expect(lease.expiresAt).toBe(5_110);
    now = 5_110;
    expect(await store.getLease('t1')).toBeUndefined();
  });
});
