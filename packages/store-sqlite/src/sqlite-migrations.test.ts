import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LunationError } from '@lunation/contract';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { createKysely, createMigrator, latestSchemaVersion, sqliteMigrations } from './sqlite-migrations.js';
import { SqliteStore } from './sqlite-store.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-sqlite-migrations-'));
let files = 0;

afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** A database file at an older schema version, as an earlier release of the store left it. */
async function databaseAtVersion(version: string): Promise<string> {
  files += 1;
  const path = join(directory, `${version}-${files}.db`);
  const client = new Database(path);
  const result = await createMigrator(createKysely(client)).migrateTo(version);
  expect(result.error).toBeUndefined();
  expect(result.results?.at(-1)?.migrationName).toBe(version);
  client.close();
  return path;
}

const databaseAtVersion1 = () => databaseAtVersion('001_initial');

function columnsOf(path: string, table: string): string[] {
  const inspector = new Database(path, { readonly: true });
  const columns = inspector
    .prepare(`PRAGMA table_info(${table})`)
    .all()
    .map((column) => (column as { name: string }).name);
  inspector.close();
  return columns;
}

describe('SQLite migrations', () => {
  it('has every version, the latest last', () => {
    expect(Object.keys(sqliteMigrations)).toEqual([
      '001_initial',
      '002_message_run_id',
      '003_derived_message_count',
      '004_lease_incarnation',
    ]);
    expect(latestSchemaVersion).toBe('004_lease_incarnation');
  });

  it('upgrades a version-1 database in place, keeping its data', async () => {
    const path = await databaseAtVersion1();
    const client = new Database(path);
    const run = {
      identity: { threadId: 't1', runId: 'r1', agentId: 'assistant', origin: 'user' },
      status: 'done',
      steps: 1,
      usage: { inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 },
      openTickets: [],
      state: {},
      createdAt: 1_000,
      updatedAt: 2_000,
    };
    const messages = [
      { id: 'm1', role: 'user', content: [{ type: 'text', text: 'hello' }] },
      { id: 'm2', role: 'assistant', content: [{ type: 'text', text: 'hi' }], metadata: { runId: 'r1' } },
    ];
    const entry = {
      runId: 'r1',
      toolCallId: 'c1',
      threadId: 't1',
      toolName: 'lookup',
      idempotencyKey: 'r1:c1',
      status: 'in-flight',
      attempts: 1,
      startedAt: 1_500,
    };
    client
      .prepare(
        `INSERT INTO lunation_threads (id, resource_id, metadata, message_count, created_at, updated_at, state)
         VALUES ('t1', 'user-1', '{"title":"old"}', 2, 1000, 2000, '{"mood":"calm"}')`,
      )
      .run();
    const insertMessage = client.prepare(
      'INSERT INTO lunation_messages (thread_id, seq, message, created_at) VALUES (?, ?, ?, ?)',
    );
    for (const [index, message] of messages.entries()) {
      insertMessage.run('t1', index + 1, JSON.stringify(message), 1_000);
    }
    client
      .prepare('INSERT INTO lunation_runs (run_id, thread_id, record, created_at) VALUES (?, ?, ?, ?)')
      .run('r1', 't1', JSON.stringify(run), 1_000);
    client
      .prepare(
        'INSERT INTO lunation_tool_executions (run_id, tool_call_id, thread_id, record) VALUES (?, ?, ?, ?)',
      )
      .run('r1', 'c1', 't1', JSON.stringify(entry));
    client
      .prepare(
        'INSERT INTO lunation_leases (thread_id, token, owner, run_id, expires_at) VALUES (?, ?, ?, ?, NULL)',
      )
      .run('t1', 7, 'worker', 'r1');
    expect(
      client
        .prepare('PRAGMA table_info(lunation_messages)')
        .all()
        .map((column) => (column as { name: string }).name),
    ).not.toContain('run_id');
    client.close();

    const store = await SqliteStore.open({ path });
    try {
      expect(await store.schemaVersion()).toBe(latestSchemaVersion);
      const checkpoint = await store.loadCheckpoint('t1');
      expect(checkpoint?.thread).toEqual({
        id: 't1',
        resourceId: 'user-1',
        metadata: { title: 'old' },
        messageCount: 2,
        createdAt: 1_000,
        updatedAt: 2_000,
      });
      expect(checkpoint?.messages.map((record) => record.message)).toEqual(messages);
      // 002 backfills the new run_id column from the message's metadata.runId.
      expect(checkpoint?.messages.map((record) => record.runId)).toEqual([undefined, 'r1']);
      expect(checkpoint?.threadState).toEqual({ mood: 'calm' });
      expect(checkpoint?.latestRun).toEqual(run);
      expect(await store.listToolExecutions('r1')).toEqual([entry]);
      expect((await store.listThreads({ resourceId: 'user-1' })).items.map((thread) => thread.id)).toEqual([
        't1',
      ]);
      const lease = await store.acquireLease({ threadId: 't1', owner: 'new', runId: 'r2', ttlMs: 1_000 });
      expect(lease.token).toBe(8);
      expect(
        await store.commit({
          threadId: 't1',
          expectedMessageCount: 2,
          messages: [messages[0] as never],
          leaseToken: 8,
        }),
      ).toEqual({ messageCount: 3 });
    } finally {
      await store.close();
    }

    const inspector = new Database(path, { readonly: true });
    const applied = inspector.prepare('SELECT name FROM lunation_migration ORDER BY name').pluck().all();
    const indexes = inspector
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'lunation_%'")
      .pluck()
      .all();
    inspector.close();
    expect(applied).toEqual(Object.keys(sqliteMigrations));
    expect(indexes).toContain('lunation_threads_resource');
    expect(columnsOf(path, 'lunation_threads')).not.toContain('message_count');
  });

  it('upgrades a version-3 database in place: a held lease counts as renewed when it expires, with no incarnation', async () => {
    const path = await databaseAtVersion('003_derived_message_count');
    const expiresAt = Date.now() + 60_000;
    const client = new Database(path);
    client
      .prepare(
        'INSERT INTO lunation_leases (thread_id, token, owner, run_id, expires_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run('t3', 4, 'server', 'r1', expiresAt);
    client.close();

    const store = await SqliteStore.open({ path });
    try {
      expect(await store.getLease('t3')).toEqual({
        threadId: 't3',
        owner: 'server',
        runId: 'r1',
        token: 4,
        renewedAt: expiresAt,
        expiresAt,
      });
      // A lease from before incarnations is waited out, never taken over by the owner's next life.
      await expect(
        store.acquireLease({
          threadId: 't3',
          owner: 'server',
          incarnation: 'next',
          runId: 'r2',
          ttlMs: 1_000,
        }),
      ).rejects.toMatchObject({ code: 'thread-busy' });
    } finally {
      await store.close();
    }
    expect(columnsOf(path, 'lunation_leases')).toEqual(expect.arrayContaining(['incarnation', 'renewed_at']));
  });

  it('upgrades a version-2 database in place: the message count comes from the messages', async () => {
    const path = await databaseAtVersion('002_message_run_id');
    expect(columnsOf(path, 'lunation_threads')).toContain('message_count');
    const client = new Database(path);
    client
      .prepare(
        `INSERT INTO lunation_threads (id, resource_id, metadata, message_count, created_at, updated_at, state)
         VALUES ('t2', NULL, '{}', 3, 1000, 3000, NULL), ('empty', NULL, '{}', 0, 500, 600, NULL)`,
      )
      .run();
    const insertMessage = client.prepare(
      'INSERT INTO lunation_messages (thread_id, seq, message, created_at, run_id) VALUES (?, ?, ?, ?, ?)',
    );
    const messages = [1, 2, 3].map((seq) => ({
      id: `m${seq}`,
      role: 'user',
      content: [{ type: 'text', text: `message ${seq}` }],
    }));
    for (const [index, message] of messages.entries()) {
      insertMessage.run('t2', index + 1, JSON.stringify(message), 1_000 * (index + 1), 'r1');
    }
    client.close();

    const store = await SqliteStore.open({ path });
    try {
      expect(await store.schemaVersion()).toBe(latestSchemaVersion);
      expect(await store.getThread('t2')).toEqual({
        id: 't2',
        metadata: {},
        messageCount: 3,
        createdAt: 1_000,
        updatedAt: 3_000,
      });
      expect(await store.getThread('empty')).toMatchObject({ messageCount: 0, updatedAt: 600 });
      expect(
        (await store.listMessages('t2')).map((record) => [record.seq, record.message, record.runId]),
      ).toEqual(messages.map((message, index) => [index + 1, message, 'r1']));
      await expect(
        store.commit({ threadId: 't2', expectedMessageCount: 2, messages: [messages[0] as never] }),
      ).rejects.toMatchObject({ code: 'store-conflict', details: { messageCount: 3 } });
      expect(
        await store.commit({ threadId: 't2', expectedMessageCount: 3, messages: [messages[0] as never] }),
      ).toEqual({ messageCount: 4 });
      const thread = await store.getThread('t2');
      expect(thread?.messageCount).toBe(4);
      expect(thread?.updatedAt).toBeGreaterThan(3_000);
      expect((await store.listThreads()).items.map((item) => [item.id, item.messageCount])).toEqual([
        ['empty', 0],
        ['t2', 4],
      ]);
    } finally {
      await store.close();
    }
    expect(columnsOf(path, 'lunation_threads')).not.toContain('message_count');
  });

  it('fails with migration-failed and leaves the database untouched when it was migrated by a newer version', async () => {
    const path = await databaseAtVersion1();
    const client = new Database(path);
    client
      .prepare("INSERT INTO lunation_migration (name, timestamp) VALUES ('099_from_the_future', ?)")
      .run(new Date().toISOString());
    client.close();

    const store = new SqliteStore({ path });
    const error = await store.init().then(
      () => expect.fail('init should fail'),
      (reason: unknown) => reason,
    );
    expect(LunationError.hasCode(error, 'migration-failed')).toBe(true);
    expect((error as LunationError).message).toContain('099_from_the_future');
    await store.close();

    const inspector = new Database(path, { readonly: true });
    const columns = inspector
      .prepare('PRAGMA table_info(lunation_messages)')
      .all()
      .map((column) => (column as { name: string }).name);
    inspector.close();
    expect(columns).not.toContain('run_id');
  });

  it('lets several stores open one new file at once, migrating it once', async () => {
    files += 1;
    const path = join(directory, `fresh-${files}.db`);
    const stores = await Promise.all(Array.from({ length: 4 }, () => SqliteStore.open({ path })));
    for (const store of stores) expect(await store.schemaVersion()).toBe(latestSchemaVersion);
    await stores[0]!.createThread({ id: 't1' });
    expect(await stores[3]!.getThread('t1')).toBeDefined();
    for (const store of stores) await store.close();
  });
});
