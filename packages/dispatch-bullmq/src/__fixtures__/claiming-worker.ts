/**
 * A worker process for the SIGKILL test: claims one thread, acknowledges its first submission, reports
 * `{"event":"claimed"}` on stdout and keeps its claim alive (extending it at half its lock) until it is killed.
 */
import { BullMQDispatcher } from '../bullmq-dispatcher.js';

const { url, keyPrefix } = JSON.parse(process.argv[2] ?? '{}') as { url: string; keyPrefix: string };
const dispatcher = new BullMQDispatcher({ url, keyPrefix });
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
