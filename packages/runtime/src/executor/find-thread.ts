import { LunationError } from '@lunation/contract';
import type { ExecutorCore } from './executor-core.js';

// Stage "find" of decisions sent by id: which thread they are for.

/**
 * The thread of a run (a live one, then a stored one) named by `{ runId }`, or of an id that may name a run or
 * a thread; such an id naming both is refused.
 */
export async function findThread(core: ExecutorCore, target: string | { runId: string }): Promise<string> {
  const byRun = typeof target === 'object' && target !== null;
  const id = byRun ? target.runId : target;
  if (typeof id !== 'string' || id.length === 0) {
    throw new LunationError('invalid-argument', 'sendDecisions() needs a non-empty thread or run id');
  }
  const active = core.runs.find(id);
  if (active) return active.identity.threadId;
  const { persistence } = core;
  const run = await persistence.getRun(id);
  if (byRun) {
    if (run) return run.identity.threadId;
    throw new LunationError('not-found', `No run "${id}"`);
  }
  if (run) {
    const { threadId } = run.identity;
    if (threadId !== id && (await persistence.hasThread(id))) {
      throw new LunationError(
        'invalid-argument',
        `"${id}" names both a run (of thread "${threadId}") and a thread; send the decisions by the thread id "${threadId}"`,
        { details: { runId: id, threadId } },
      );
    }
    return threadId;
  }
  if (await persistence.hasThread(id)) return id;
  throw new LunationError('not-found', `No run or thread "${id}"`);
}
