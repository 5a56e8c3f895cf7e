import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  LunationError,
  type LunationStore,
  type ModelRequest,
  type ToolResultPart,
} from '@lunation/contract';
import { createRuntime, defineTool, type ToolContext } from '@lunation/runtime';
import { reply, ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import { PostgresStore } from '@lunation/store-postgres';
import { RedisStore } from '@lunation/store-redis';
import { SqliteStore } from '@lunation/store-sqlite';
import Database from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { crashableStore } from './crashable-store.js';

// Issue 23: a tool's effect written in the store's own database commits with the call's ledger completion, so
// it happens exactly once whatever instant the process dies (the kill -9 soak tries every instant; these are
// the targeted points).

interface Outbox {
  outbox: { key: string; body: string };
}

const directory = mkdtempSync(join(tmpdir(), 'lunation-effects-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));
const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A store with transactions, plus a way to make and read the app's outbox table in the same database. */
interface Backend {
  name: string;
  open(): Promise<{
    store: LunationStore;
    table: string;
    rows(): Promise<Array<{ key: string; body: string }>>;
    close(): Promise<void>;
  }>;
}

let counter = 0;
const backends: Backend[] = [
  {
    name: 'sqlite',
    async open() {
      const path = join(directory, `effects-${++counter}.sqlite`);
      const store = await SqliteStore.open({ path });
      const reader = new Kysely<Outbox>({ dialect: new SqliteDialect({ database: new Database(path) }) });
      await reader.schema
        .createTable('outbox')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('body', 'text')
        .execute();
      return {
        store,
        table: 'outbox',
        rows: () => reader.selectFrom('outbox').selectAll().orderBy('key').execute(),
        close: async () => {
          await store.close();
          await reader.destroy();
        },
      };
    },
  },
  {
    name: 'postgres',
    async open() {
      const schema = `lunation_effects_${process.pid}_${++counter}`;
      const store = new PostgresStore({ connectionString: postgresUrl, schema });
      await store.init();
      const reader = new Kysely<Outbox>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: postgresUrl, max: 1 }) }),
      });
      await reader.schema
        .withSchema(schema)
        .createTable('outbox')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('body', 'text')
        .execute();
      return {
        store,
        table: `${schema}.outbox`,
        rows: () => reader.withSchema(schema).selectFrom('outbox').selectAll().orderBy('key').execute(),
        close: async () => {
          await reader.destroy();
          await store.dropSchema();
          await store.close();
        },
      };
    },
  },
];

/** A model that answers from the conversation alone, so any process continues the same script. */
function scripted(steps: ScriptedResponse[]) {
  return new ScriptedModel((request: ModelRequest) => {
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    return steps[answered] ?? reply('done');
  });
}

const model = () =>
  scripted([{ toolCalls: [{ toolName: 'notify', arguments: { body: 'hello' } }] }, reply('queued')]);

/** `notify` queues its message in the outbox, in the transaction that completes the call. */
function notifyTool(
  table: string,
  log: string[],
  after: (context: ToolContext) => Promise<void> | void = () => {},
  fail?: string,
) {
  return defineTool({
    name: 'notify',
    description: 'Queues a notification',
    input: z.object({ body: z.string() }),
    execute: async ({ body }, context) => {
      log.push(context.rerun ? 'rerun' : 'run');
      const queued = await context.transaction(async (transaction: Transaction<Outbox>) => {
        await transaction
          .insertInto(table as 'outbox')
          .values({ key: context.idempotencyKey, body })
          .execute();
        if (fail) throw new Error(fail);
        return { queued: context.idempotencyKey };
      });
      await after(context);
      return { returnedByTool: true, queued };
    },
  });
}

function runtimeOn(store: LunationStore, tool: ReturnType<typeof notifyTool>) {
  return createRuntime()
    .model('m', model())
    .agent({ id: 'a', model: 'm', tools: [tool] })
    .store(store)
    .options({ leaseTtlMs: 150 })
    .build();
}

function toolResults(messages: ReadonlyArray<{ message: { role: string; content: unknown[] } }>) {
  return messages
    .filter((record) => record.message.role === 'tool')
    .flatMap((record) => record.message.content as ToolResultPart[]);
}

describe.each(backends)('transactional effects on $name', (backend) => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const each of open.splice(0)) await each.close();
  });

  it('commits the effect with the ledger completion; the call’s result is what the transaction returned', async () => {
    const db = await backend.open();
    open.push(db);
    const log: string[] = [];
    const result = await runtimeOn(db.store, notifyTool(db.table, log)).generate({
      threadId: 't',
      input: 'go',
    });
    expect(result).toMatchObject({ status: 'done', finalText: 'queued' });
    const rows = await db.rows();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.body).toBe('hello');
    const [part] = toolResults(await db.store.listMessages('t'));
    expect(part?.result).toEqual({ status: 'success', data: { queued: rows[0]?.key } });
    const [entry] = await db.store.listToolExecutions(result.identity.runId);
    expect(entry).toMatchObject({ status: 'completed', attempts: 1, result: part?.result });
  });

  it('a crash after the commit, before the step is checkpointed: recovery takes the ledger’s result, 0 duplicate rows', async () => {
    const db = await backend.open();
    open.push(db);
    const log: string[] = [];
    const dying = crashableStore(db.store);
    const first = runtimeOn(
      dying.store,
      notifyTool(db.table, log, async () => {
        dying.crash();
        await new Promise(() => {});
      }),
    );
    await first.run({ threadId: 't', input: 'go', stream: false });
    await dying.crashed;
    expect(await db.rows()).toHaveLength(1);
    const second = runtimeOn(db.store, notifyTool(db.table, log));
    const deadline = Date.now() + 5_000;
    let result: Awaited<ReturnType<typeof second.generate>>;
    for (;;) {
      try {
        result = await second.generate({ threadId: 't' });
        break;
      } catch (error) {
        if (!LunationError.hasCode(error, 'thread-busy') || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    expect(result).toMatchObject({ status: 'done', finalText: 'queued' });
    expect(log).toEqual(['run']);
    const rows = await db.rows();
    expect(rows).toHaveLength(1);
    expect(toolResults(await db.store.listMessages('t'))[0]?.result).toEqual({
      status: 'success',
      data: { queued: rows[0]?.key },
    });
  });

  it('an effect that throws writes nothing: no row, and the call gets an error result', async () => {
    const db = await backend.open();
    open.push(db);
    const log: string[] = [];
    const result = await runtimeOn(
      db.store,
      notifyTool(db.table, log, undefined, 'mail server said no'),
    ).generate({
      threadId: 't',
      input: 'go',
    });
    expect(result.status).toBe('done');
    expect(await db.rows()).toEqual([]);
    const [part] = toolResults(await db.store.listMessages('t'));
    expect(part?.result.status).toBe('error');
    expect(part?.result.message).toMatch(/mail server said no/);
  });

  // Once the runtime gave up on a call (timed out and abandoned, or the run cancelled), its transaction must not
  // commit: the model was told the call failed, so its effect must not land later.
  for (const ending of ['timed out', 'cancelled'] as const) {
    it(`a call ${ending} while its transaction is open: rolled back, the effect never lands, later use is a typed error`, async () => {
      const db = await backend.open();
      open.push(db);
      const seen: { later?: unknown; returned?: unknown } = {};
      let effectEnded!: () => void;
      const ended = new Promise<void>((resolve) => {
        effectEnded = resolve;
      });
      let effectStarted!: () => void;
      const started = new Promise<void>((resolve) => {
        effectStarted = resolve;
      });
      const slow = defineTool({
        name: 'notify',
        description: 'Queues a notification, slowly',
        input: z.object({ body: z.string() }),
        ...(ending === 'timed out' ? { timeoutMs: 150 } : {}),
        execute: async ({ body }, context) => {
          try {
            seen.returned = await context.transaction(async (transaction: Transaction<Outbox>) => {
              await transaction
                .insertInto(db.table as 'outbox')
                .values({ key: context.idempotencyKey, body })
                .execute();
              effectStarted();
              // Ignores its signal, and keeps using the transaction after the runtime gave up.
              await new Promise((resolve) => setTimeout(resolve, 700));
              try {
                await transaction
                  .insertInto(db.table as 'outbox')
                  .values({ key: `${context.idempotencyKey}:later`, body })
                  .execute();
              } catch (error) {
                seen.later = error;
              }
              effectEnded();
              return { queued: context.idempotencyKey };
            });
          } catch (error) {
            seen.returned = error;
          }
          return 'the tool finished';
        },
      });
      const runtime = createRuntime()
        .model('m', model())
        .agent({ id: 'a', model: 'm', tools: [slow], toolExecution: { cancelGraceMs: 100 } })
        .store(db.store)
        .options({ leaseTtlMs: 5_000 })
        .build();
      const handle = await runtime.run({ threadId: 't', input: 'go', stream: false });
      if (ending === 'cancelled') {
        await started;
        runtime.cancel('t');
      }
      const result = await handle.result;
      await ended;
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await db.rows()).toEqual([]);
      const [part] = toolResults(await db.store.listMessages('t'));
      expect(part?.result).toMatchObject({ status: 'error', metadata: { abandoned: true } });
      const [entry] = await db.store.listToolExecutions(result.identity.runId);
      expect(entry).toMatchObject({ status: 'completed', result: part?.result });
      expect(seen.later).toBeInstanceOf(LunationError);
      expect(seen.later).toMatchObject({ code: 'cancelled' });
      expect(seen.returned).toMatchObject({ code: 'cancelled' });
    });
  }

  it('a tool that returns while its transaction is open: the transaction rolls back, the tool’s result stands', async () => {
    const db = await backend.open();
    open.push(db);
    let effectEnded!: (error: unknown) => void;
    const ended = new Promise<unknown>((resolve) => {
      effectEnded = resolve;
    });
    const hasty = defineTool({
      name: 'notify',
      description: 'Queues a notification without waiting for it',
      input: z.object({ body: z.string() }),
      execute: async ({ body }, context) => {
        let inserted!: () => void;
        const started = new Promise<void>((resolve) => {
          inserted = resolve;
        });
        context
          .transaction(async (transaction: Transaction<Outbox>) => {
            await transaction
              .insertInto(db.table as 'outbox')
              .values({ key: context.idempotencyKey, body })
              .execute();
            inserted();
            await new Promise((resolve) => setTimeout(resolve, 300));
            return { queued: context.idempotencyKey };
          })
          .then(effectEnded, effectEnded);
        await started;
        return 'sent without waiting';
      },
    });
    const runtime = createRuntime()
      .model('m', model())
      .agent({ id: 'a', model: 'm', tools: [hasty] })
      .store(db.store)
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(await ended).toMatchObject({ code: 'cancelled' });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await db.rows()).toEqual([]);
    const [part] = toolResults(await db.store.listMessages('t'));
    expect(part?.result).toEqual({ status: 'success', data: 'sent without waiting' });
    const [entry] = await db.store.listToolExecutions(result.identity.runId);
    expect(entry).toMatchObject({ status: 'completed', result: part?.result });
  });

  it('a call that times out while its completion commits: the runtime waits for the commit, and its result stands', async () => {
    const db = await backend.open();
    open.push(db);
    // The store is slow to commit once the effect has returned (the completion is being written).
    const slowCommit = new Proxy(db.store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property !== 'completeToolExecutionWithEffect') return value.bind(target);
        return (input: unknown, effect: (transaction: unknown) => Promise<unknown>) =>
          value.call(target, input, async (transaction: unknown) => {
            const result = await effect(transaction);
            await new Promise((resolve) => setTimeout(resolve, 400));
            return result;
          });
      },
    });
    const log: string[] = [];
    const tool = { ...notifyTool(db.table, log), timeoutMs: 100 };
    const runtime = createRuntime()
      .model('m', model())
      .agent({ id: 'a', model: 'm', tools: [tool], toolExecution: { cancelGraceMs: 50 } })
      .store(slowCommit)
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    const rows = await db.rows();
    expect(rows).toHaveLength(1);
    const [part] = toolResults(await db.store.listMessages('t'));
    expect(part?.result).toEqual({ status: 'success', data: { queued: rows[0]?.key } });
    const [entry] = await db.store.listToolExecutions(result.identity.runId);
    expect(entry).toMatchObject({ status: 'completed', result: part?.result });
  });

  it('completeToolExecutionWithEffect does not run the effect again once the entry is completed', async () => {
    const db = await backend.open();
    open.push(db);
    const store = db.store as LunationStore & {
      completeToolExecutionWithEffect: SqliteStore['completeToolExecutionWithEffect'];
    };
    await store.createThread({ id: 't' });
    await store.beginToolExecution({
      runId: 'r',
      toolCallId: 'c',
      threadId: 't',
      toolName: 'x',
      idempotencyKey: 'r:c',
    });
    let ran = 0;
    const effect = async () => {
      ran++;
      return { status: 'success' as const, data: ran };
    };
    const first = await store.completeToolExecutionWithEffect({ runId: 'r', toolCallId: 'c' }, effect);
    const second = await store.completeToolExecutionWithEffect({ runId: 'r', toolCallId: 'c' }, effect);
    expect(ran).toBe(1);
    expect(first).toMatchObject({ status: 'completed', result: { data: 1 } });
    expect(second).toEqual(first);
    await expect(
      store.completeToolExecutionWithEffect({ runId: 'r', toolCallId: 'missing' }, effect),
    ).rejects.toMatchObject({
      code: 'not-found',
    });
  });
});

describe('stores without transactions', () => {
  it('memory and Redis: context.transaction() throws unsupported, and the effect never runs', async () => {
    const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
    const stores: LunationStore[] = [
      new MemoryStore(),
      new RedisStore({ url: redisUrl, keyPrefix: `lunation-effects:${process.pid}:` }),
    ];
    for (const store of stores) {
      const errors: unknown[] = [];
      let ran = false;
      const tool = defineTool({
        name: 'notify',
        description: 'Queues a notification',
        input: z.object({ body: z.string() }),
        execute: async (_, context) => {
          try {
            await context.transaction(async () => {
              ran = true;
            });
          } catch (error) {
            errors.push(error);
          }
          return 'no transaction';
        },
      });
      const runtime = createRuntime()
        .model('m', model())
        .agent({ id: 'a', model: 'm', tools: [tool] })
        .store(store)
        .build();
      const threadId = `t-${process.pid}-${++counter}`;
      await runtime.generate({ threadId, input: 'go' });
      await store.deleteThread(threadId);
      await store.close();
      expect(ran).toBe(false);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatchObject({ code: 'unsupported' });
      expect(String((errors[0] as Error).message)).toContain(`The ${store.kind} store cannot commit`);
    }
  });
});
