import type { FleetClient } from '@lunation/fleet';
import { SeededRandom } from '../../fixtures/seeded-random.js';
import type { ThreadPlan } from './fleet-plans.js';
import { type DrivenRun, driveRun } from './run-driver.js';

/** Per planned step, on top of the base timeout, a user waits this much longer for a run to end. */
const perStepMs = 15_000;

/**
 * Plays a thread's user: sends its messages one after the other, each once the run before it ended, so the
 * thread's job lives across runs. A run that fails its user (no end in time) ends the thread's conversation.
 */
export async function driveThread(
  fronts: readonly [FleetClient, FleetClient],
  threadId: string,
  plan: ThreadPlan,
  seed: number,
  timeoutMs: number,
): Promise<DrivenRun[]> {
  const driven: DrivenRun[] = [];
  for (const run of plan.runs) {
    const random = SeededRandom.derive(seed, run.plan.label);
    const result = await driveRun(
      fronts,
      threadId,
      run,
      random,
      timeoutMs + perStepMs * run.plan.steps.length,
    );
    driven.push(result);
    if (result.error) break;
  }
  return driven;
}
