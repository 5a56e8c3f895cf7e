/**
 * A worker process for the SIGKILL test: claims one thread (with the default lock), acknowledges its first
 * submission, reports `{"event":"claimed"}` on stdout and keeps its claim alive (extending it every half lock)
 * until it is killed.
 */
import { PostgresDispatcher } from '../postgres-dispatcher.js';

const { url, schema } = JSON.parse(process.argv[2] ?? '{}') as { url: string; schema: string };
const dispatcher = await PostgresDispatcher.open({ connectionString: url, schema });
const claim = await dispatcher.claim({ workerId: `worker-${process.pid}`, waitMs: 10_000 });
if (claim === undefined) {
  process.stdout.write(`${JSON.stringify({ event: 'error', message: 'nothing to claim' })}\n`);
  process.exit(1);
}
const [first] = await dispatcher.pending(claim.threadId);
if (first !== undefined) await dispatcher.acknowledge(claim.threadId, [first.id]);
setInterval(() => {
  dispatcher.extend(claim).catch((error: unknown) => {
    process.stdout.write(`${JSON.stringify({ event: 'error', message: String(error) })}\n`);
  });
}, 1_000);
process.stdout.write(
  `${JSON.stringify({ event: 'claimed', threadId: claim.threadId, token: claim.token })}\n`,
);
