import { SeededRandom } from '../../fixtures/seeded-random.js';
import type { ThreadPlan } from './fleet-plans.js';
import type { FleetUserClient } from './fleet-user-client.js';
import { type DrivenRun, driveRun } from './run-driver.js';

/** Per planned step, on top of the base timeout, a user waits this much longer for a run to end. */
const perStepMs = 15_000;

/**
 * Plays a thread's user: creates the thread on a front, then sends its messages one after the other, each once
 * the run before it ended, so the thread's job lives across runs. A run that fails its user (no end in time)
 * ends the thread's conversation.
 */
export async function driveThread(
  client: FleetUserClient,
  plan: ThreadPlan,
  seed: number,
  timeoutMs: number,
): Promise<{ threadId: string; runs: DrivenRun[] }> {
  const random = SeededRandom.derive(seed, plan.label);
  // A user keeps trying for a while: on a starved machine a front (the other one stalled or restarting) can take
  // longer than one request timeout to answer.
  const created = await client.json(random.integer(0, 1), '/threads', {}, Date.now() + 3 * timeoutMs);
  if (created.status !== 201 && created.status !== 200) {
    throw new Error(`creating a thread was answered ${created.status}: ${JSON.stringify(created.body)}`);
  }
  const threadId = (created.body as { thread: { id: string } }).thread.id;
  const runs: DrivenRun[] = [];
  for (const run of plan.runs) {
    const result = await driveRun(
      client,
      threadId,
      run,
      SeededRandom.derive(seed, run.plan.label),
      timeoutMs + perStepMs * run.plan.steps.length,
    );
    runs.push(result);
    if (result.error) break;
  }
  return { threadId, runs };
}
