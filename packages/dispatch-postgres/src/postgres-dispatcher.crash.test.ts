import { fileURLToPath } from 'node:url';
import { makeSubmission, uniqueId } from '@lunation/dispatch-testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFixture } from './__fixtures__/child-process.js';
import {
  dropSchema,
  postgresUrl,
  sharedTestPostgres,
  uniqueSchema,
} from './__fixtures__/postgres-test-server.js';
import { PostgresDispatcher } from './postgres-dispatcher.js';

const worker = fileURLToPath(new URL('./__fixtures__/claiming-worker.ts', import.meta.url));
const server = sharedTestPostgres();
const cleanups: (() => Promise<void>)[] = [];

/** The documented bound with the default settings: a claim not extended is lost within lockMs (2000). */
const defaultLockMs = 2_000;
/** Scheduling slack of a busy test machine on top of the bound. */
const slackMs = 2_000;

beforeAll(() => server.connect());

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(() => server.end());

describe('PostgresDispatcher with a worker process that is SIGKILLed', () => {
  it('redelivers the thread to a waiting worker within the lock, with every unacknowledged submission in order', async () => {
    const admin = server.connected();
    const schema = uniqueSchema();
    const dispatcher = await PostgresDispatcher.open({ connectionString: postgresUrl, schema });
    cleanups.push(async () => {
      await dispatcher.close();
      await dropSchema(admin, schema);
    });
    const threadId = uniqueId('thread');
    const submissions = [1, 2, 3].map((n) => makeSubmission(threadId, { text: `m${n}` }));
    for (const submission of submissions) await dispatcher.submit(submission);

    const child = startFixture(worker, { url: postgresUrl, schema });
    cleanups.push(async () => {
      child.child.kill('SIGKILL');
      await child.exited;
    });
    const held = await child.next('claimed');
    expect(held.threadId).toBe(threadId);
    // While the worker lives and extends its claim, nobody else gets the thread.
    expect(await dispatcher.claim({ workerId: 'survivor', waitMs: defaultLockMs + 500 })).toBeUndefined();

    child.child.kill('SIGKILL');
    await child.exited;
    const late = makeSubmission(threadId, { text: 'after the kill' });
    await dispatcher.submit(late);
    const claim = await dispatcher.claim({ workerId: 'survivor', waitMs: defaultLockMs + slackMs });

    expect(claim).toEqual(expect.objectContaining({ threadId, workerId: 'survivor', attempt: 1 }));
    expect(claim!.token).not.toBe(held.token);
    expect((await dispatcher.pending(threadId)).map((entry) => entry.id)).toEqual([
      submissions[1]!.id,
      submissions[2]!.id,
      late.id,
    ]);
    // The dead worker's claim counted as lost, not as a failure.
    expect((await dispatcher.depth()).failed).toBe(0);
    expect(await dispatcher.complete(claim!)).toEqual({ rewoken: true });
  });
});
