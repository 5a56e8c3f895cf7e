import { fileURLToPath } from 'node:url';
import type { CancelRequest } from '@lunation/contract';
import { collect, makeSubmission, uniqueId } from '@lunation/dispatch-testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFixture } from './__fixtures__/child-process.js';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  uniqueSchema,
} from './__fixtures__/postgres-test-server.js';
import { PostgresDispatcher } from './postgres-dispatcher.js';

const worker = fileURLToPath(new URL('./__fixtures__/queue-worker.ts', import.meta.url));
const server = sharedTestPostgres();
const cleanups: (() => Promise<void>)[] = [];

beforeAll(() => server.connect());

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(() => server.end());

describe('PostgresDispatcher across two processes', () => {
  it('a worker process runs what this process submits, in order, and both sides hear each other through NOTIFY', async () => {
    const admin = server.connected();
    const schema = uniqueSchema();
    // A long poll interval: only notifications can deliver within the waits below.
    const dispatcher = await PostgresDispatcher.open({
      connectionString: postgresUrl,
      schema,
      pollIntervalMs: 60_000,
    });
    cleanups.push(async () => {
      await dispatcher.close();
      await dropSchema(admin, schema);
    });
    const threads = [uniqueId('thread'), uniqueId('thread'), uniqueId('thread')];
    const child = startFixture(worker, { url: postgresUrl, schema, watchThreadId: threads[0] });
    cleanups.push(async () => {
      child.child.kill('SIGKILL');
      await child.exited;
    });
    await child.next('ready');

    const abort = new AbortController();
    const streams = threads.map((threadId) =>
      collect(dispatcher.subscribeEvents(`run-${threadId}`, { signal: abort.signal }), {
        timeoutMs: 20_000,
        abort,
      }),
    );
    const texts = ['one', 'two', 'three', 'four', 'last'];
    for (const text of texts) {
      for (const threadId of threads) await dispatcher.submit(makeSubmission(threadId, { text }));
    }
    for (const received of await Promise.all(streams)) {
      expect(
        received.map((record) => (record.event.type === 'text-delta' ? record.event.delta : '')),
      ).toEqual(texts);
      expect(received.map((record) => Number(record.id))).toEqual([1, 2, 3, 4, 5]);
    }

    const request = await dispatcher.requestCancel({
      threadId: threads[0]!,
      runId: `run-${threads[0]}`,
      reason: 'stop',
    });
    const heard = await child.next('cancel');
    expect(heard.request as CancelRequest).toEqual(request);

    // Closing hands back nothing it does not hold, and leaves no timer or connection: the process exits by itself.
    child.send('stop');
    await child.next('closed');
    await child.exited;
    const depth = await dispatcher.depth();
    expect([depth.pending, depth.active, depth.waiting, depth.failed]).toEqual([0, 0, 0, 0]);
    expect(depth.completed).toBeGreaterThanOrEqual(threads.length);
  });
});
