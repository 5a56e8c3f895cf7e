import { createHash } from 'node:crypto';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import type { LunationStore } from '@lunation/contract';
import { createRuntime, type RunResult } from '@lunation/runtime';
import { PostgresStore } from '@lunation/store-postgres';
import pg from 'pg';
import type { BenchConfig } from './config.js';
import { addTool, countToolResults, scriptedModel } from './frameworks/lunation.js';
import { Unavailable } from './harness.js';
import type { PostgresFloor, PostgresRoundTripCount, W1PostgresRoundTripResult } from './results.js';
import { Script } from './script.js';
import type { Scratch } from './workloads/scratch.js';

// What the bench does with PostgreSQL: the stores of W1 and W3 and the round-trip count (report.ts renders them).

export const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** PostgresStore variants: the server's default `synchronous_commit`, and `off` on the store's connections. */
export type PostgresStoreKind = 'postgres' | 'postgres-async';

/** The connection string of a variant: `off` is set per connection through libpq's `options`. */
function connectionString(kind: PostgresStoreKind, url = postgresUrl): string {
  if (kind === 'postgres') return url;
  const parsed = new URL(url);
  parsed.searchParams.set('options', '-c synchronous_commit=off');
  return parsed.toString();
}

/** Schemas this process created, dropped by `dropPostgresSchemas` when its task ends. */
const schemas = new Set<string>();

/** A schema of its own per key prefix (W3's warm-up and measured stores differ; its stores A and B share one). */
function schemaFor(prefix: string): string {
  return `lunation_bench_${createHash('sha256').update(prefix).digest('hex').slice(0, 16)}`;
}

/** Throws `Unavailable` unless a PostgreSQL server answers at `url`. */
export async function checkPostgres(url = postgresUrl): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new Unavailable(`no PostgreSQL answers at ${url} (set POSTGRES_URL): ${(error as Error).message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

/** The server's version and its default `synchronous_commit` (what the `postgres` variant runs with). */
async function serverSettings(url: string): Promise<{ version: string; synchronousCommit: string }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ version: string; synchronous_commit: string }>(
      "SELECT current_setting('server_version') AS version, current_setting('synchronous_commit') AS synchronous_commit",
    );
    return { version: rows[0]!.version, synchronousCommit: rows[0]!.synchronous_commit };
  } finally {
    await client.end();
  }
}

/** Opens a PostgresStore of the variant in a fresh schema for `prefix` (migrated before it returns). */
export async function openPostgresStore(
  kind: PostgresStoreKind,
  prefix: string,
  url = postgresUrl,
): Promise<PostgresStore> {
  await checkPostgres(url);
  const schema = schemaFor(prefix);
  schemas.add(schema);
  return PostgresStore.open({ connectionString: connectionString(kind, url), schema });
}

/** Drops every schema this process created. */
export async function dropPostgresSchemas(): Promise<void> {
  for (const schema of schemas) {
    try {
      await new PostgresStore({ connectionString: postgresUrl, schema }).dropSchema();
    } catch {
      // Best effort, like the Redis key cleanup.
    }
  }
  schemas.clear();
}

/**
 * A TCP proxy in front of PostgreSQL that counts round trips (one begins whenever a client sends bytes after the
 * server last answered, or first) and the client's protocol messages by type (`P` Parse, `B` Bind, `D`
 * Describe, `E` Execute, `S` Sync, `Q` simple query). Only meaningful for one run at a time.
 */
export class PostgresWire {
  roundTrips = 0;
  readonly messages = new Map<string, number>();
  #awaitingResponse = false;
  readonly #sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(targetUrl: string): Promise<PostgresWire> {
    const target = new URL(targetUrl);
    const host = target.hostname || '127.0.0.1';
    const port = Number(target.port || 5432);
    let wire: PostgresWire | undefined;
    const server = createServer((client) => wire?.track(client, tcpConnect({ host, port })));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('proxy has no port');
    const proxied = new URL(targetUrl);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(address.port);
    wire = new PostgresWire(server, proxied.toString());
    return wire;
  }

  reset(): void {
    this.roundTrips = 0;
    this.messages.clear();
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private track(client: Socket, upstream: Socket): void {
    this.#sockets.add(client);
    this.#sockets.add(upstream);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    let pending = Buffer.alloc(0);
    let started = false;
    client.on('data', (chunk) => {
      if (!this.#awaitingResponse) {
        this.roundTrips++;
        this.#awaitingResponse = true;
      }
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      for (;;) {
        // The startup message has no type byte: its length, then the protocol version.
        const header = started ? 5 : 4;
        if (pending.length < header) break;
        const length = started ? pending.readInt32BE(1) + 1 : pending.readInt32BE(0);
        if (pending.length < length) break;
        if (started) {
          const type = String.fromCharCode(pending[0]!);
          this.messages.set(type, (this.messages.get(type) ?? 0) + 1);
        }
        started = true;
        pending = pending.subarray(length);
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => {
      this.#awaitingResponse = false;
      client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      socket.on('close', end);
      socket.on('error', end);
    }
  }
}

const storeMethods = new Set([
  'createThread',
  'loadCheckpoint',
  'commit',
  'beginToolExecution',
  'completeToolExecution',
  'acquireLease',
  'renewLease',
  'releaseLease',
  'getRun',
  'getThread',
  'getLease',
]);

/**
 * `store` with each call's round trips tallied by method: the wire's count while the call was in flight. Calls
 * that overlap another call are counted in `overlapped` (their round trips cannot be told apart).
 */
function tallyCalls(store: LunationStore, wire: PostgresWire) {
  const calls = new Map<string, { calls: number; roundTrips: number }>();
  let inFlight = 0;
  let overlapped = 0;
  const tallied = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof property !== 'string' || !storeMethods.has(property) || typeof value !== 'function')
        return value;
      return async (...args: unknown[]) => {
        inFlight++;
        if (inFlight > 1) overlapped++;
        const before = wire.roundTrips;
        try {
          return await value.apply(target, args);
        } finally {
          inFlight--;
          const entry = calls.get(property) ?? { calls: 0, roundTrips: 0 };
          entry.calls++;
          entry.roundTrips += wire.roundTrips - before;
          calls.set(property, entry);
        }
      };
    },
  });
  return {
    store: tallied,
    calls,
    overlapped: () => overlapped,
    reset() {
      calls.clear();
      overlapped = 0;
    },
  };
}

/** Times `operation` in 5 batches of 100 after 100 to warm up; the median µs per operation. */
async function medianUs(operation: () => Promise<unknown>): Promise<number> {
  for (let index = 0; index < 100; index++) await operation();
  const batches: number[] = [];
  for (let batch = 0; batch < 5; batch++) {
    const started = performance.now();
    for (let index = 0; index < 100; index++) await operation();
    batches.push(((performance.now() - started) * 1000) / 100);
  }
  return batches.sort((a, b) => a - b)[2]!;
}

/**
 * The server's own floor, on one connection in a new schema: a round trip, and a commit with synchronous_commit on
 * and off.
 */
async function serverFloor(url: string, schema: string): Promise<PostgresFloor> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const table = `"${schema}".bench_floor`;
    await client.query(`CREATE SCHEMA "${schema}"`);
    await client.query(`CREATE TABLE ${table} (id bigint)`);
    const insert = { name: 'bench_floor_insert', text: `INSERT INTO ${table} VALUES ($1)`, values: [1] };
    const selectUs = await medianUs(() => client.query({ name: 'bench_floor_select', text: 'SELECT 1' }));
    await client.query('SET synchronous_commit = on');
    const commitUs = await medianUs(() => client.query(insert));
    await client.query('SET synchronous_commit = off');
    const commitAsyncUs = await medianUs(() => client.query(insert));
    return { selectUs, commitUs, commitAsyncUs };
  } finally {
    await client.end();
  }
}

/** W1 runs (non-streaming) of one variant through `wire`, with each store call's round trips. */
async function countRoundTrips(
  kind: PostgresStoreKind,
  wire: PostgresWire,
  config: BenchConfig,
  scratch: Scratch,
): Promise<PostgresRoundTripCount[]> {
  const script = new Script(`${scratch.runPrefix}${kind}-`);
  const store = await openPostgresStore(kind, `${scratch.prefix}:round-trips:${kind}`, wire.url);
  try {
    const tally = tallyCalls(store, wire);
    const runtime = createRuntime()
      .model('m', scriptedModel(script))
      .agent({ id: 'a', model: 'm', tools: [addTool(script)] })
      .store(tally.store)
      .build();
    const run = async (steps: number) => {
      const { key, input } = script.start(steps);
      const result: RunResult = await runtime.generate({ threadId: key, input });
      if (result.status !== 'done') throw new Error(`run ${key} ended ${result.status}`);
      script.finish(key, {
        finalText: result.finalText,
        toolResults: countToolResults(result),
        steps: result.steps,
      });
    };
    const counts: PostgresRoundTripCount[] = [];
    for (const steps of config.w1.steps) {
      for (let index = 0; index < 3; index++) await run(steps);
      const runs = config.w1.redisRoundTripRuns;
      wire.reset();
      tally.reset();
      for (let index = 0; index < runs; index++) await run(steps);
      const calls: PostgresRoundTripCount['calls'] = {};
      for (const [method, entry] of tally.calls) {
        calls[method] = { perRun: entry.calls / runs, roundTripsPerCall: entry.roundTrips / entry.calls };
      }
      const messagesPerRun: Record<string, number> = {};
      for (const [type, count] of [...wire.messages].sort()) messagesPerRun[type] = count / runs;
      counts.push({
        store: kind,
        steps,
        runs,
        roundTripsPerRun: wire.roundTrips / runs,
        messagesPerRun,
        calls,
        overlappedCalls: tally.overlapped(),
      });
    }
    await runtime.drain();
    return counts;
  } finally {
    await store.close();
  }
}

/**
 * Round trips of Lunation's W1 on PostgresStore with each `synchronous_commit` setting (the server's default, and
 * `off`), counted by a TCP proxy between the store's pool and the server, with each store call's share; and the
 * server's own floor beside them.
 */
export async function runW1PostgresRoundTrips(
  config: BenchConfig,
  scratch: Scratch,
): Promise<Pick<W1PostgresRoundTripResult, 'server' | 'floor' | 'counts'>> {
  await checkPostgres();
  const server = await serverSettings(postgresUrl);
  const wire = await PostgresWire.start(postgresUrl);
  try {
    const counts: PostgresRoundTripCount[] = [];
    for (const kind of ['postgres', 'postgres-async'] as const)
      counts.push(...(await countRoundTrips(kind, wire, config, scratch)));
    const schema = schemaFor(`${scratch.prefix}:floor`);
    schemas.add(schema);
    return { server, floor: await serverFloor(postgresUrl, schema), counts };
  } finally {
    await wire.close();
  }
}
