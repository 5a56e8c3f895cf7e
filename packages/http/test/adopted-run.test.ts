import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { readSse, runEndOf, startApi, type TestApi } from './support.js';

let api: TestApi | undefined;

afterEach(async () => {
  await api?.close();
  api = undefined;
});

describe('LocalFront.adopt: a run started outside the API (continued after a restart)', () => {
  it('streams it with ids of this process, from its start for an id of the log the run had before', async () => {
    api = await startApi(new ScriptedModel([reply('Continued after the restart.')]));
    const created = await api.call('/threads', { method: 'POST' });
    const threadId = ((await created.json()) as { thread: { id: string } }).thread.id;
    const run = await api.runtime.run({ threadId, input: 'go on', resourceId: 'alice' });
    api.front.adopt(run);
    expect((await run.result).finalText).toBe('Continued after the restart.');
    const path = `/threads/${threadId}/runs/${run.runId}/events`;

    const all = await readSse(await api.call(path));
    expect(runEndOf(all).status).toBe('done');
    const prefix = /^([0-9a-f]{8}\.)1$/.exec(all[0]?.id ?? '')?.[1];
    expect(prefix).toBeDefined();
    expect(all.map((event) => event.id)).toEqual(all.map((_, index) => `${prefix}${index + 1}`));

    // A client of the process that died saw ids 1…40 of the run's old log: it gets this log whole.
    const stale = await readSse(await api.call(path, { headers: { 'last-event-id': '40' } }));
    expect(stale.map((event) => event.id)).toEqual(all.map((event) => event.id));
    // A client of this log continues after the id it saw.
    const after = await readSse(await api.call(path, { headers: { 'last-event-id': `${prefix}2` } }));
    expect(after.map((event) => event.id)).toEqual(all.slice(2).map((event) => event.id));
    const bad = await api.call(path, { headers: { 'last-event-id': `${prefix}x` } });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('invalid-argument');
  });
});
