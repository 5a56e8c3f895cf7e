import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LunationError, type LunationStore } from '@lunation/contract';
import { createRuntime } from '@lunation/runtime';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { PostgresStore } from '@lunation/store-postgres';
import { RedisStore } from '@lunation/store-redis';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ProcessConfig } from '../fixtures/agent-process.js';
import { startAgentProcess } from './process-harness.js';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const directory = mkdtempSync(join(tmpdir(), 'lunation-durability-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

let counter = 0;
type BackendConfig = Pick<
  ProcessConfig,
  'store' | 'path' | 'redisUrl' | 'keyPrefix' | 'postgresUrl' | 'schema'
>;
interface Backend {
  name: 'sqlite' | 'redis' | 'postgres';
  config(): BackendConfig;
  open(config: BackendConfig): Promise<LunationStore>;
}

/** Postgres schemas of the running test (each test its own), dropped after it. */
const postgresSchemas: string[] = [];

const backends: Backend[] = [
  {
    name: 'sqlite',
    config: () => ({ store: 'sqlite', path: join(directory, `db-${++counter}.sqlite`) }),
    open: (config) => SqliteStore.open({ path: config.path ?? '' }),
  },
  {
    name: 'redis',
    config: () => ({
      store: 'redis',
      redisUrl,
      keyPrefix: `lunation-test:durability:${process.pid}:${++counter}:`,
    }),
    open: async (config) => new RedisStore({ url: redisUrl, keyPrefix: config.keyPrefix ?? '' }),
  },
  {
    name: 'postgres',
    config: () => {
      const schema = `lunation_durability_${process.pid}_${++counter}`;
      postgresSchemas.push(schema);
      return { store: 'postgres', postgresUrl, schema };
    },
    open: (config) => PostgresStore.open({ connectionString: postgresUrl, schema: config.schema ?? '' }),
  },
];

const [, redisBackend, postgresBackend] = backends as [Backend, Backend, Backend];

beforeAll(async () => {
  // Fail (never skip) when Redis or PostgreSQL is missing.
  const probe = new RedisStore({ url: redisUrl, keyPrefix: `lunation-test:probe:${process.pid}:` });
  try {
    await probe.getLease('probe');
  } catch (error) {
    throw new Error(
      `Redis is required for these tests and is not reachable at ${redisUrl}: ${(error as Error).message}`,
    );
  } finally {
    await probe.close();
  }
  const postgresProbe = new PostgresStore({
    connectionString: postgresUrl,
    schema: `lunation_durability_probe_${process.pid}`,
  });
  try {
    await postgresProbe.dropSchema();
  } catch (error) {
    throw new Error(
      `PostgreSQL is required for these tests and is not reachable at ${postgresUrl} (set POSTGRES_URL): ${(error as Error).message}`,
    );
  } finally {
    await postgresProbe.close();
  }
});

afterEach(async () => {
  for (const schema of postgresSchemas.splice(0)) {
    const store = new PostgresStore({ connectionString: postgresUrl, schema });
    await store.dropSchema().finally(() => store.close());
  }
});

function readLog(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe.each(backends)('durability with $name', (backend) => {
  it('resumes a suspended run in another process from the store alone', async () => {
    const base = {
      ...backend.config(),
      threadId: 'thread-resume',
      sideEffectLog: join(directory, `log-${++counter}`),
    };
    const first = startAgentProcess({ ...base, mode: 'suspend' });
    const suspended = await first.waitFor('ended');
    expect(await first.exited).toBe(0);
    expect(suspended).toMatchObject({ status: 'waiting', termination: { type: 'suspended' } });
    expect(readLog(base.sideEffectLog)).toEqual([]);

    const second = startAgentProcess({ ...base, mode: 'resume', ticketId: String(suspended.ticketId) });
    const done = await second.waitFor('ended');
    expect(await second.exited).toBe(0);
    expect(done).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
      finalText: 'Saved your note.',
      runId: suspended.runId,
    });
    expect(readLog(base.sideEffectLog)).toEqual([
      expect.stringMatching(new RegExp(`^write_note ${suspended.runId}:lc_\\S+ remember the milk$`)),
    ]);

    const store = await backend.open(base);
    try {
      const messages = await store.listMessages('thread-resume');
      expect(messages.map((record) => record.seq)).toEqual([1, 2, 3, 4]);
      expect(messages.map((record) => record.message.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
      ]);
      const run = await store.getRun(String(suspended.runId));
      expect(run).toMatchObject({ status: 'done', openTickets: [], steps: 2 });
    } finally {
      await store.close();
    }
  });

  it('survives SIGKILL mid-tool: the tool re-runs with the same idempotency key, finished tools do not', async () => {
    const base = {
      ...backend.config(),
      threadId: 'thread-crash',
      sideEffectLog: join(directory, `log-${++counter}`),
      leaseTtlMs: 800,
    };
    const doomed = startAgentProcess({ ...base, mode: 'crash' });
    const started = await doomed.waitFor('tool-started');
    const running = await doomed.waitFor('running');
    doomed.child.kill('SIGKILL');
    await doomed.exited;
    const key = String(started.key);
    expect(key).toMatch(new RegExp(`^${running.runId}:lc_\\S+$`));
    expect(readLog(base.sideEffectLog)).toEqual([
      expect.stringMatching(new RegExp(`^step_one ${running.runId}:lc_\\S+$`)),
      `slow_write start ${key} rerun=false`,
    ]);

    const recovery = startAgentProcess({ ...base, mode: 'recover' });
    const done = await recovery.waitFor('ended');
    expect(await recovery.exited).toBe(0);
    expect(done).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
      finalText: 'All done.',
      runId: running.runId,
    });
    expect(done.events).toEqual([
      { type: 'tool-execution-start', toolName: 'slow_write', rerun: true, key },
      { type: 'tool-result', toolName: 'slow_write', fromLedger: false },
    ]);
    expect(readLog(base.sideEffectLog)).toEqual([
      expect.stringMatching(new RegExp(`^step_one ${running.runId}:lc_\\S+$`)),
      `slow_write start ${key} rerun=false`,
      `slow_write start ${key} rerun=true`,
      `slow_write done ${key}`,
    ]);

    const store = await backend.open(base);
    try {
      const messages = await store.listMessages('thread-crash');
      expect(messages.map((record) => record.seq)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(messages.map((record) => record.message.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
        'tool',
        'assistant',
      ]);
      expect(new Set(messages.map((record) => record.message.id)).size).toBe(6);
      // The ledger keys calls by the runtime's id, kept in the assistant message beside the provider's.
      const callIdOf = (toolCallId: string) =>
        messages
          .flatMap((record) => (record.message.role === 'assistant' ? record.message.content : []))
          .find((part) => part.type === 'tool-call' && part.toolCallId === toolCallId) as
          | { callId?: string }
          | undefined;
      const ledger = await store.getToolExecution(
        String(running.runId),
        String(callIdOf('call_2_1')?.callId),
      );
      expect(ledger).toMatchObject({ status: 'completed', attempts: 2, idempotencyKey: key });
      const first = await store.getToolExecution(String(running.runId), String(callIdOf('call_1_1')?.callId));
      expect(first).toMatchObject({ status: 'completed', attempts: 1 });
    } finally {
      await store.close();
    }
  });
});

describe.each([redisBackend, postgresBackend])('leases across processes ($name)', (backend) => {
  it('lets exactly one of two runtimes run a thread, and takes it over after the owner dies', async () => {
    const base = {
      ...backend.config(),
      threadId: 'thread-race',
      sideEffectLog: join(directory, `log-${++counter}`),
      leaseTtlMs: 700,
    };
    const owner = startAgentProcess({ ...base, mode: 'hold' });
    const running = await owner.waitFor('running');
    expect(typeof running.leaseToken).toBe('number');

    const makeRuntime = (store: LunationStore) =>
      createRuntime()
        .model('m', new ScriptedModel(() => reply('mine now')))
        .agent({ id: 'agent', model: 'm' })
        .store(store)
        .build();
    const storeA = await backend.open(base);
    const storeB = await backend.open(base);
    try {
      const [a, b] = await Promise.allSettled([
        makeRuntime(storeA).run({ threadId: 'thread-race', input: 'a' }),
        makeRuntime(storeB).run({ threadId: 'thread-race', input: 'b' }),
      ]);
      for (const attempt of [a, b]) {
        expect(attempt.status).toBe('rejected');
        const error = (attempt as PromiseRejectedResult).reason;
        expect(LunationError.hasCode(error, 'thread-busy')).toBe(true);
        expect((error as LunationError).message).toContain(`run ${running.runId}`);
      }

      owner.child.kill('SIGKILL');
      await owner.exited;
      // Until the dead owner's lease expires the thread stays busy; then one of the two runtimes takes it.
      const runtimes = [makeRuntime(storeA), makeRuntime(storeB)];
      let result: Awaited<ReturnType<(typeof runtimes)[0]['generate']>> | undefined;
      const deadline = Date.now() + 10_000;
      while (!result && Date.now() < deadline) {
        const attempts = await Promise.allSettled(
          runtimes.map((runtime) => runtime.generate({ threadId: 'thread-race', input: 'take over' })),
        );
        const won = attempts.filter((attempt) => attempt.status === 'fulfilled');
        const lost = attempts.filter((attempt) => attempt.status === 'rejected');
        expect(won.length).toBeLessThanOrEqual(1);
        for (const attempt of lost)
          expect(LunationError.hasCode((attempt as PromiseRejectedResult).reason, 'thread-busy')).toBe(true);
        if (won.length === 1) result = (won[0] as PromiseFulfilledResult<NonNullable<typeof result>>).value;
        else await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(result?.finalText).toBe('mine now');

      // A write fenced with the dead owner's token is rejected and changes nothing.
      const before = await storeA.listMessages('thread-race');
      const stale = storeA.commit({
        threadId: 'thread-race',
        expectedMessageCount: before.length,
        messages: [{ id: 'late', role: 'user', content: [{ type: 'text', text: 'from the grave' }] }],
        leaseToken: Number(running.leaseToken),
      });
      await expect(stale).rejects.toMatchObject({ code: 'stale-lease' });
      expect(await storeA.listMessages('thread-race')).toHaveLength(before.length);
    } finally {
      await storeA.close();
      await storeB.close();
    }
  });
});

describe.each(backends)('two live processes with one owner ($name)', (backend) => {
  it('lets only the live holder run the thread; a restart with that owner takes over before the lease expires', {
    timeout: 60_000,
  }, async () => {
    const base = {
      ...backend.config(),
      threadId: 'thread-twins',
      sideEffectLog: join(directory, `log-${++counter}`),
      // Long enough that a child process started on a loaded machine (several seconds of start-up) still takes
      // the lease over before it expires; the restart must win on the same-owner rule (three quarters of the
      // time to live unrenewed), not on luck.
      leaseTtlMs: 8_000,
      owner: 'replica',
    };
    const holder = startAgentProcess({ ...base, mode: 'crash' });
    const started = await holder.waitFor('tool-started');
    const running = await holder.waitFor('running');
    const key = String(started.key);

    // A second live process with the same owner, at once and again after more than a whole time to live (so
    // not saved by luck of timing: the holder's renewals keep it out), is refused.
    for (const wait of [0, base.leaseTtlMs + 500]) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      const twin = startAgentProcess({ ...base, mode: 'contend' });
      const contended = await twin.waitFor('contended');
      expect(await twin.exited).toBe(0);
      expect(contended).toMatchObject({
        code: 'thread-busy',
        details: { runId: running.runId, owner: 'replica' },
      });
      expect(String(contended.message)).toContain("another live process with this runtime's own owner");
    }
    expect(readLog(base.sideEffectLog)).toEqual([
      expect.stringMatching(new RegExp(`^step_one ${running.runId}:lc_\\S+$`)),
      `slow_write start ${key} rerun=false`,
    ]);

    const store = await backend.open(base);
    try {
      holder.child.kill('SIGKILL');
      await holder.exited;
      const killedAt = Date.now();
      // Read once the holder is dead: its last renewal is the one the takeover counts from.
      const lease = await store.getLease('thread-twins');
      expect(lease).toMatchObject({ owner: 'replica', runId: running.runId });
      const restarted = startAgentProcess({ ...base, mode: 'recover' });
      const done = await restarted.waitFor('ended');
      expect(await restarted.exited).toBe(0);
      expect(done).toMatchObject({ status: 'done', finalText: 'All done.', runId: running.runId });
      // Taken over once the dead life's lease went three quarters of its time to live unrenewed: before it expired.
      expect(Number(done.startedAt)).toBeLessThan(Number(lease?.expiresAt));
      expect(Number(done.startedAt) - killedAt).toBeLessThan(base.leaseTtlMs);
      expect(readLog(base.sideEffectLog)).toEqual([
        expect.stringMatching(new RegExp(`^step_one ${running.runId}:lc_\\S+$`)),
        `slow_write start ${key} rerun=false`,
        `slow_write start ${key} rerun=true`,
        `slow_write done ${key}`,
      ]);
    } finally {
      await store.close();
    }
  });
});

// Keeps the fixture's side-effect log format documented next to the assertions above.
writeFileSync(join(directory, 'README'), 'side-effect logs of the durability tests\n');
