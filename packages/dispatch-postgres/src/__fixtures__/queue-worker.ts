/**
 * A worker process for the two-process test. It watches `watchThreadId` for cancel requests (reporting each as
 * `{"event":"cancel"}`), then works the queue: for each claimed thread it appends one `text-delta` event per
 * pending submission to the run `run-<threadId>` (ending the log after a submission whose text is `last`),
 * acknowledges them and completes the claim. A line on stdin closes it; the process then exits by itself (the
 * dispatcher leaves no timer or connection behind).
 */
import { createInterface } from 'node:readline';
import type { AgentEvent } from '@lunation/contract';
import { PostgresDispatcher } from '../postgres-dispatcher.js';

const { url, schema, watchThreadId } = JSON.parse(process.argv[2] ?? '{}') as {
  url: string;
  schema: string;
  watchThreadId: string;
};
const report = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);
const dispatcher = await PostgresDispatcher.open({ connectionString: url, schema });
const stop = new AbortController();
const lines = createInterface({ input: process.stdin });
lines.on('line', () => stop.abort());

await dispatcher.watchCancel(watchThreadId, (request) => report({ event: 'cancel', request }));
report({ event: 'ready', pid: process.pid });

let seq = 0;
while (!stop.signal.aborted) {
  const claim = await dispatcher.claim({
    workerId: `worker-${process.pid}`,
    waitMs: 1_000,
    signal: stop.signal,
  });
  if (claim === undefined) continue;
  const entries = await dispatcher.pending(claim.threadId);
  const runId = `run-${claim.threadId}`;
  for (const entry of entries) {
    const part = entry.request.type === 'input' ? entry.request.input[0]?.content[0] : undefined;
    const text = part?.type === 'text' ? part.text : '';
    const event: AgentEvent = {
      type: 'text-delta',
      identity: { threadId: claim.threadId, runId, agentId: 'assistant', origin: 'user' },
      seq: seq++,
      step: 0,
      delta: text,
    };
    await dispatcher.appendEvents(runId, [event]);
    if (text === 'last') await dispatcher.endEvents(runId, { ttlMs: 60_000 });
  }
  await dispatcher.acknowledge(
    claim.threadId,
    entries.map((entry) => entry.id),
  );
  await dispatcher.complete(claim);
}
await dispatcher.close();
lines.close();
report({ event: 'closed' });
