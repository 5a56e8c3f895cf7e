import { type LunationError, systemClock } from '@lunation/contract';
import {
  expectLunationError,
  makeAssistantMessage,
  makeBeginToolExecutionInput,
  makeRunRecord,
  makeToolExecution,
  makeToolResult,
  makeUserMessage,
} from '@lunation/store-testkit';
import { CamelCasePlugin, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  uniqueSchema,
} from './__fixtures__/postgres-test-server.js';
import { WireCounter } from './__fixtures__/wire-counter.js';
import { PostgresStore } from './postgres-store.js';

const server = sharedTestPostgres();
let admin: pg.Pool;
let schemas: string[] = [];

beforeAll(() => server.connect());
beforeEach(() => {
  admin = server.connected();
});
afterEach(async () => {
  for (const schema of schemas) await dropSchema(admin, schema);
  schemas = [];
});
afterAll(() => server.end());

/** A fresh schema, dropped after the test. */
function freshSchema(): string {
  const schema = uniqueSchema();
  schemas.push(schema);
  return schema;
}

async function count(sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await admin.query<{ count: string }>(sql, values);
  return Number(rows[0]!.count);
}

describe('PostgresStore', () => {
  describe('one round trip per call, counted on the wire', () => {
    let wire: WireCounter;
    let store: PostgresStore;

    beforeEach(async () => {
      wire = await WireCounter.start(postgresUrl);
      // One connection, so every call below reuses it (no connection setup inside a measurement).
      store = await PostgresStore.open({
        connectionString: wire.url,
        schema: freshSchema(),
        maxConnections: 1,
      });
    });

    afterEach(async () => {
      await store.close();
      await wire.close();
    });

    /** Runs `call` and answers the round trips and protocol messages it took. */
    async function measure(call: () => Promise<unknown>): Promise<{ roundTrips: number; syncs: number }> {
      wire.reset();
      await call().catch(() => undefined);
      return { roundTrips: wire.roundTrips, syncs: wire.messages.get('S') ?? 0 };
    }

    it('takes one round trip (one Sync) for each hot-path call, first use and later, and for rejections', async () => {
      const threadId = 'thread-1';
      const run = makeRunRecord({ threadId });
      const runId = run.identity.runId;
      const one = { roundTrips: 1, syncs: 1 };
      expect(await measure(() => store.createThread({ id: threadId }))).toEqual(one);
      expect(
        await measure(() =>
          store.acquireLease({ threadId, owner: 'worker', runId, ttlMs: 30_000 }).then((lease) => {
            expect(lease.token).toBe(1);
          }),
        ),
      ).toEqual(one);
      expect(await measure(() => store.loadCheckpoint(threadId))).toEqual(one);
      for (let step = 0; step < 3; step += 1) {
        const toolCallId = `call-${step}`;
        const entry = makeToolExecution({ threadId, runId, toolCallId });
        // A step: the checkpoint before the tool (messages, run, state, ledger entry), then the ledger start.
        expect(
          await measure(() =>
            store.commit({
              threadId,
              expectedMessageCount: step * 2,
              leaseToken: 1,
              messages: [makeUserMessage(`question ${step}`), makeAssistantMessage(`answer ${step}`)],
              run: { ...run, steps: step + 1 },
              threadState: { step },
              toolExecutions: [entry],
            }),
          ),
        ).toEqual(one);
        expect(
          await measure(() =>
            store.beginToolExecution(
              makeBeginToolExecutionInput({ threadId, runId, toolCallId }, { leaseToken: 1 }),
            ),
          ),
        ).toEqual(one);
        expect(
          await measure(() =>
            store.completeToolExecution({ runId, toolCallId, result: makeToolResult(step), leaseToken: 1 }),
          ),
        ).toEqual(one);
      }
      expect(await measure(() => store.renewLease({ threadId, token: 1, ttlMs: 30_000 }))).toEqual(one);
      // Rejections are one round trip too, and write nothing.
      expect(
        await measure(() =>
          expectLunationError(
            store.commit({ threadId, expectedMessageCount: 0, messages: [makeUserMessage()] }),
            'store-conflict',
          ),
        ),
      ).toEqual(one);
      expect(
        await measure(() =>
          expectLunationError(
            store.acquireLease({ threadId, owner: 'other', runId: 'r2', ttlMs: 1_000 }),
            'thread-busy',
          ),
        ),
      ).toEqual(one);
      expect(await measure(() => store.releaseLease({ threadId, token: 1 }))).toEqual(one);
      expect((await store.getThread(threadId))?.messageCount).toBe(6);
      expect((await store.listToolExecutions(runId)).map((entry) => entry.status)).toEqual([
        'completed',
        'completed',
        'completed',
      ]);
    });
  });

  describe('options and connections', () => {
    it('uses an injected pool and leaves it open on close', async () => {
      const pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
      try {
        const store = await PostgresStore.open({ pool, schema: freshSchema() });
        await store.createThread({ id: 't1' });
        await store.close();
        expect((await pool.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
        await expectLunationError(store.getThread('t1'), 'store-unavailable');
      } finally {
        await pool.end();
      }
    });

    it('uses an injected Kysely instance, bypassing its plugins, and leaves it open on close', async () => {
      const pool = new pg.Pool({ connectionString: postgresUrl, max: 2 });
      const database = new Kysely<unknown>({
        dialect: new PostgresDialect({ pool }),
        plugins: [new CamelCasePlugin()],
      });
      try {
        const schema = freshSchema();
        const store = await PostgresStore.open({ database, schema });
        const input = makeBeginToolExecutionInput({ threadId: 't1', runId: 'r1' });
        const begun = await store.beginToolExecution(input);
        expect(begun).toMatchObject({ runId: 'r1', toolCallId: input.toolCallId, attempts: 1 });
        await store.close();
        expect(await count(`SELECT count(*) FROM "${schema}".tool_executions`)).toBe(1);
        const { rows } = await sql<{ fortyTwo: number }>`SELECT 42 AS forty_two`.execute(database);
        expect(rows).toEqual([{ fortyTwo: 42 }]);
      } finally {
        await database.destroy();
      }
    });

    it('closes the pool it opened', async () => {
      const schema = freshSchema();
      const before = await count(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lunation-close-test'",
      );
      const store = await PostgresStore.open({
        connectionString: `${postgresUrl}${postgresUrl.includes('?') ? '&' : '?'}application_name=lunation-close-test`,
        schema,
      });
      await store.getThread('t1');
      expect(
        await count(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lunation-close-test'",
        ),
      ).toBeGreaterThan(before);
      await store.close();
      await expectLunationError(store.getThread('t1'), 'store-unavailable');
      // The server notices the ended connections within a moment.
      for (let attempt = 0; attempt < 50; attempt += 1) {
        const open = await count(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lunation-close-test'",
        );
        if (open === before) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(
        await count(
          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'lunation-close-test'",
        ),
      ).toBe(before);
    });

    it('dropSchema drops the schema with everything in it and closes the store', async () => {
      const schema = freshSchema();
      const store = await PostgresStore.open({ connectionString: postgresUrl, schema });
      await store.createThread({ id: 't1' });
      expect(await count('SELECT count(*) FROM pg_namespace WHERE nspname = $1', [schema])).toBe(1);
      await store.dropSchema();
      expect(await count('SELECT count(*) FROM pg_namespace WHERE nspname = $1', [schema])).toBe(0);
      await expectLunationError(store.getThread('t1'), 'store-unavailable');
      // A store that never opened drops a schema without migrating it first.
      const other = freshSchema();
      await PostgresStore.open({ connectionString: postgresUrl, schema: other }).then((opened) =>
        opened.close(),
      );
      await new PostgresStore({ connectionString: postgresUrl, schema: other }).dropSchema();
      expect(await count('SELECT count(*) FROM pg_namespace WHERE nspname = $1', [other])).toBe(0);
    });

    it('keeps stores of different schemas apart in one database', async () => {
      const left = await PostgresStore.open({ connectionString: postgresUrl, schema: freshSchema() });
      const right = await PostgresStore.open({ connectionString: postgresUrl, schema: freshSchema() });
      try {
        await left.createThread({ id: 'shared-id', metadata: { side: 'left' } });
        await right.createThread({ id: 'shared-id', metadata: { side: 'right' } });
        await left.commit({ threadId: 'shared-id', expectedMessageCount: 0, messages: [makeUserMessage()] });
        expect((await left.getThread('shared-id'))?.metadata).toEqual({ side: 'left' });
        expect((await right.getThread('shared-id'))?.messageCount).toBe(0);
        const leftLease = await left.acquireLease({
          threadId: 'shared-id',
          owner: 'a',
          runId: 'r',
          ttlMs: 10_000,
        });
        const rightLease = await right.acquireLease({
          threadId: 'shared-id',
          owner: 'b',
          runId: 'r',
          ttlMs: 10_000,
        });
        expect([leftLease.token, rightLease.token]).toEqual([1, 1]);
      } finally {
        await left.close();
        await right.close();
      }
    });

    it('rejects a bad schema name and a bad connection string up front', () => {
      for (const schema of ['', '1abc', 'has space', 'quote"d', 'x'.repeat(64)]) {
        expect(() => new PostgresStore({ connectionString: postgresUrl, schema })).toThrow(
          expect.objectContaining({ code: 'invalid-argument' }),
        );
      }
      expect(() => new PostgresStore({ connectionString: '' })).toThrow(
        expect.objectContaining({ code: 'invalid-argument' }),
      );
      expect(() => new PostgresStore({ pool: {} as never })).toThrow(
        expect.objectContaining({ code: 'invalid-argument' }),
      );
    });

    it('fails with a retryable store-unavailable when the server cannot be reached', async () => {
      const store = new PostgresStore({
        connectionString: 'postgres://postgres@127.0.0.1:1/test',
        schema: freshSchema(),
      });
      const error = await expectLunationError(store.getThread('t1'), 'store-unavailable');
      expect(error.isRetryable).toBe(true);
      expect(error.message).toContain('ECONNREFUSED');
      await store.close();
    });
  });

  describe('concurrency', () => {
    it('never deadlocks or fails internally under racing calls of every kind on a few threads', async () => {
      const schema = freshSchema();
      const stores = await Promise.all(
        [0, 1, 2].map(() => PostgresStore.open({ connectionString: postgresUrl, schema, maxConnections: 4 })),
      );
      // A fixed-seed generator, so a failure replays.
      let seed = 20_240_611;
      const random = (below: number) => {
        seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
        return Math.floor((seed / 2_147_483_648) * below);
      };
      const expected = new Set(['store-conflict', 'stale-lease', 'thread-busy', 'not-found', 'lease-lost']);
      const unexpected: unknown[] = [];
      const succeeded = new Map<number, number>();
      const latestToken = new Map<string, number>();
      const threads = ['t0', 't1'];
      try {
        for (const threadId of threads) await stores[0]!.createThread({ id: threadId });
        const operation = async (store: PostgresStore, index: number) => {
          const threadId = threads[random(threads.length)]!;
          const runId = `run-${threadId}`;
          const toolCallId = `call-${random(4)}`;
          const token = 1 + random(6);
          const kind = random(8);
          await call(store, kind, { threadId, runId, toolCallId, token, index });
          succeeded.set(kind, (succeeded.get(kind) ?? 0) + 1);
        };
        type Call = { threadId: string; runId: string; toolCallId: string; token: number; index: number };
        const call = async (
          store: PostgresStore,
          kind: number,
          { threadId, runId, toolCallId, token, index }: Call,
        ) => {
          switch (kind) {
            case 0:
            case 1: {
              const count = (await store.getThread(threadId))?.messageCount ?? 0;
              return store.commit({
                threadId,
                expectedMessageCount: count,
                // Half the commits name the latest token (a token never issued is refused), so some land.
                leaseToken: index % 2 === 0 ? (latestToken.get(threadId) ?? token) : token,
                messages: [makeUserMessage(`m${index}`)],
                run: makeRunRecord({ threadId, runId }),
                threadState: { index },
                toolExecutions: [makeToolExecution({ threadId, runId, toolCallId })],
              });
            }
            // Half the begins and completions name the latest token too: with only tokens 1–6, once the
            // acquisitions pass 6 every one would be stale, and a completion would never land on a slow machine.
            case 2:
              return store.beginToolExecution(
                makeBeginToolExecutionInput(
                  { threadId, runId, toolCallId },
                  { leaseToken: index % 2 === 0 ? (latestToken.get(threadId) ?? token) : token },
                ),
              );
            case 3:
              return store.completeToolExecution({
                runId,
                toolCallId,
                result: makeToolResult(index),
                leaseToken: index % 2 === 0 ? (latestToken.get(threadId) ?? token) : token,
              });
            case 4: {
              const lease = await store.acquireLease({ threadId, owner: `o${index}`, runId, ttlMs: 20 });
              latestToken.set(threadId, lease.token);
              return lease;
            }
            case 5:
              return store.releaseLease({ threadId, token });
            case 6:
              // Half the renewals name the latest token, so some land on a live lease.
              return store.renewLease({
                threadId,
                token: index % 2 === 0 ? (latestToken.get(threadId) ?? token) : token,
                ttlMs: 20,
              });
            default:
              return (await store.deleteThread(threadId)) || store.createThread({ id: threadId });
          }
        };
        // 60 rounds, then more (up to 400) until every kind of call has succeeded at least once.
        for (let round = 0; round < 60 || (succeeded.size < 8 && round < 400); round += 1) {
          const outcomes = await Promise.allSettled(
            Array.from({ length: 12 }, (_, index) => operation(stores[index % 3]!, round * 12 + index)),
          );
          for (const outcome of outcomes) {
            if (outcome.status === 'rejected' && !expected.has((outcome.reason as LunationError).code)) {
              unexpected.push(outcome.reason);
            }
          }
        }
      } finally {
        for (const store of stores) await store.close();
      }
      expect(unexpected).toEqual([]);
      // Every kind of call also succeeded, so the race was real.
      expect([...succeeded.keys()].sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    });
  });

  describe('what PostgreSQL adds to the contract', () => {
    let store: PostgresStore;

    beforeEach(async () => {
      store = await PostgresStore.open({ connectionString: postgresUrl, schema: freshSchema() });
    });

    afterEach(async () => {
      await store.close();
    });

    it('rejects a commit carrying a ledger entry of another thread with invalid-argument, writing nothing', async () => {
      await store.createThread({ id: 'left' });
      await store.createThread({ id: 'right' });
      const entry = makeToolExecution({ threadId: 'left', runId: 'r1', toolCallId: 'c1' });
      await store.commit({
        threadId: 'left',
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [entry],
      });
      const error = await expectLunationError(
        store.commit({
          threadId: 'right',
          expectedMessageCount: 0,
          messages: [makeUserMessage()],
          run: makeRunRecord({ threadId: 'right', runId: 'r-right' }),
          threadState: { written: true },
          toolExecutions: [
            makeToolExecution({ threadId: 'right', runId: 'r1', toolCallId: 'c0' }),
            { ...entry, threadId: 'right', status: 'completed', result: makeToolResult('hijacked') },
          ],
        }),
        'invalid-argument',
      );
      expect(error.message).toContain('"left"');
      expect(await store.loadCheckpoint('right')).toEqual({
        thread: await store.getThread('right'),
        messages: [],
        threadState: {},
        latestRun: undefined,
      });
      expect(await store.listToolExecutions('r1')).toEqual([entry]);
      expect(await store.getRun('r-right')).toBeUndefined();
    });

    it('rejects beginToolExecution of an entry of another thread with invalid-argument, in flight or completed', async () => {
      const input = makeBeginToolExecutionInput({ threadId: 'left', runId: 'r1' });
      const begun = await store.beginToolExecution(input);
      await expectLunationError(
        store.beginToolExecution({ ...input, threadId: 'right' }),
        'invalid-argument',
      );
      expect(await store.getToolExecution('r1', input.toolCallId)).toEqual(begun);
      const completed = await store.completeToolExecution({
        runId: 'r1',
        toolCallId: input.toolCallId,
        result: makeToolResult(1),
      });
      await expectLunationError(
        store.beginToolExecution({ ...input, threadId: 'right' }),
        'invalid-argument',
      );
      expect(await store.getToolExecution('r1', input.toolCallId)).toEqual(completed);
    });

    it('keeps the last of two entries for one tool call in a commit', async () => {
      await store.createThread({ id: 't1' });
      const first = makeToolExecution({ threadId: 't1', runId: 'r1', toolCallId: 'c1' });
      const last = {
        ...first,
        status: 'completed' as const,
        result: makeToolResult(2),
        completedAt: Date.now(),
      };
      await store.commit({
        threadId: 't1',
        expectedMessageCount: 0,
        messages: [],
        toolExecutions: [first, last],
      });
      expect(await store.listToolExecutions('r1')).toEqual([last]);
    });

    it('rejects JSON PostgreSQL cannot store (a NUL character) with invalid-argument, writing nothing', async () => {
      await store.createThread({ id: 't1' });
      await expectLunationError(
        store.commit({
          threadId: 't1',
          expectedMessageCount: 0,
          messages: [makeUserMessage('fine'), makeUserMessage('nul \u0000 inside')],
          threadState: { written: true },
        }),
        'invalid-argument',
      );
      expect(await store.listMessages('t1')).toEqual([]);
      expect(await store.getThreadState('t1')).toEqual({});
      await expectLunationError(store.createThread({ id: 'nul\u0000id' }), 'invalid-argument');
    });

    it('takes lease expiry from the server clock', async () => {
      const { rows } = await admin.query<{ now: string }>(
        'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now',
      );
      const serverNow = Number(rows[0]!.now);
      const lease = await store.acquireLease({ threadId: 't1', owner: 'w', runId: 'r', ttlMs: 60_000 });
      expect(lease.expiresAt).toBeGreaterThanOrEqual(serverNow + 60_000);
      expect(lease.expiresAt).toBeLessThan(serverNow + 60_000 + 5_000);
    });

    it('stores messages, state and results as JSONB, and finds a thread by resource through its index', async () => {
      await store.createThread({ id: 't1', resourceId: 'user-1' });
      await store.commit({
        threadId: 't1',
        expectedMessageCount: 0,
        messages: [makeUserMessage('hello')],
        threadState: { mood: 'calm' },
      });
      const s = `"${store.schema}"`;
      const { rows } = await admin.query(
        `SELECT pg_typeof(m.message)::text AS message, pg_typeof(t.state)::text AS state,
           m.message->'content'->0->>'text' AS text
         FROM ${s}.messages m JOIN ${s}.threads t ON t.id = m.thread_id`,
      );
      expect(rows).toEqual([{ message: 'jsonb', state: 'jsonb', text: 'hello' }]);
      // On a table this small the planner prefers a scan; with scans disabled it shows the index that fits.
      const client = await admin.connect();
      try {
        await client.query('SET enable_seqscan = off');
        const plan = await client.query(
          `EXPLAIN (FORMAT JSON) SELECT id FROM ${s}.threads WHERE resource_id = 'user-1'
           AND (created_at, id) > (0, '') ORDER BY created_at, id LIMIT 10`,
        );
        expect(JSON.stringify(plan.rows)).toContain('"Index Name":"threads_resource"');
      } finally {
        await client.query('RESET enable_seqscan');
        client.release();
      }
    });
  });
});

describe('PostgresStore group commit (callBatching: auto)', () => {
  it('sends the calls that wait for a busy pool together, and a rejected call fails alone', async () => {
    const wire = await WireCounter.start(postgresUrl);
    const store = await PostgresStore.open({
      connectionString: wire.url,
      schema: freshSchema(),
      maxConnections: 2,
    });
    try {
      const threads = Array.from({ length: 60 }, (_, index) => `thread-${String(index).padStart(2, '0')}`);
      await Promise.all(threads.map((id) => store.createThread({ id })));
      const leases = await Promise.all(
        threads.map((threadId) =>
          store.acquireLease({ threadId, owner: 'w', runId: `run-${threadId}`, ttlMs: 30_000 }),
        ),
      );
      // thread-00's lease is taken over, so its holder's commit below is fenced.
      await store.releaseLease({ threadId: 'thread-00', token: leases[0]!.token });
      await store.acquireLease({ threadId: 'thread-00', owner: 'other', runId: 'run-other', ttlMs: 30_000 });

      wire.reset();
      const outcomes = await Promise.allSettled(
        threads.map((threadId, index) =>
          store.commit({
            threadId,
            // thread-01 expects the wrong count: a conflict.
            expectedMessageCount: threadId === 'thread-01' ? 5 : 0,
            leaseToken: leases[index]!.token,
            messages: [makeUserMessage(`hello ${threadId}`)],
          }),
        ),
      );
      // One Sync per statement (round trips on two connections can overlap on the wire).
      const statements = wire.messages.get('S') ?? 0;

      expect(outcomes[0]!.status).toBe('rejected');
      expect(((outcomes[0] as PromiseRejectedResult).reason as LunationError).code).toBe('stale-lease');
      expect(outcomes[1]!.status).toBe('rejected');
      expect(((outcomes[1] as PromiseRejectedResult).reason as LunationError).code).toBe('store-conflict');
      for (const outcome of outcomes.slice(2))
        expect(outcome).toEqual({ status: 'fulfilled', value: { messageCount: 1 } });
      // 60 commits on 2 connections: the first two alone, the rest in batches of up to 32.
      expect(statements).toBeGreaterThanOrEqual(3);
      expect(statements).toBeLessThanOrEqual(8);
      const schema = store.schema;
      expect(await count(`SELECT count(*) FROM "${schema}".messages`)).toBe(58);
      expect(
        await count(
          `SELECT count(*) FROM "${schema}".messages WHERE thread_id IN ('thread-00', 'thread-01')`,
        ),
      ).toBe(0);
      const loaded = await Promise.all(threads.map((threadId) => store.loadCheckpoint(threadId)));
      expect(loaded.map((checkpoint) => checkpoint?.messages.length)).toEqual([
        0,
        0,
        ...threads.slice(2).map(() => 1),
      ]);
    } finally {
      await store.close();
      await wire.close();
    }
  });

  it("sends every call on its own with callBatching: 'off', and refuses an unknown mode", async () => {
    const wire = await WireCounter.start(postgresUrl);
    const store = await PostgresStore.open({
      connectionString: wire.url,
      schema: freshSchema(),
      maxConnections: 2,
      callBatching: 'off',
    });
    try {
      wire.reset();
      await Promise.all(Array.from({ length: 20 }, (_, index) => store.createThread({ id: `t-${index}` })));
      expect(wire.messages.get('S')).toBe(20);
    } finally {
      await store.close();
      await wire.close();
    }
    expect(
      () =>
        new PostgresStore({ connectionString: postgresUrl, callBatching: 'sometimes' as unknown as 'auto' }),
    ).toThrow(
      expect.objectContaining({ code: 'invalid-argument', message: expect.stringContaining("'auto'") }),
    );
  });
});

describe('PostgresStore on an injected clock', () => {
  it('stamps records with its clock (leases keep the server time)', async () => {
    let now = 5_000;
    const store = await PostgresStore.open({
      connectionString: postgresUrl,
      schema: freshSchema(),
      maxConnections: 1,
      clock: { ...systemClock, now: () => now },
    });
    try {
      expect(await store.createThread({ id: 't1' })).toMatchObject({ createdAt: 5_000, updatedAt: 5_000 });
      now = 5_010;
      expect(await store.updateThreadMetadata('t1', { a: 1 })).toMatchObject({ updatedAt: 5_010 });
    } finally {
      await store.close();
    }
  });
});
