import type { AgentEvent, RunEventRecord } from '@lunation/contract';
import type { FleetClient } from '@lunation/runtime';
import { type FleetPlan, planText } from '../../fixtures/fleet-agent.js';
import type { SeededRandom } from '../../fixtures/seeded-random.js';

/** What the fleet test saw of one run, as its user. */
export interface DrivenRun {
  threadId: string;
  plan: FleetPlan;
  runId: string;
  /** Every event the user's streams delivered, across drops and reconnections, in arrival order. */
  seen: RunEventRecord[];
  /** How often the stream was dropped and resumed (after the last id seen) on the other front. */
  reconnects: number;
  /** When each approval was submitted, by tool call id (before the submission, so executions must follow it). */
  approvedAt: Map<string, number>;
  /** How the run ended, as its last `run-end` said. */
  ended: Extract<AgentEvent, { type: 'run-end' }> | undefined;
  error?: string;
}

/** How long the user waits for a run's next `run-end` before giving up on it (a stranded run). */
const followTimeoutMs = 90_000;

/**
 * Plays a user of the fleet for one thread: submits the plan through one front, follows the run's events,
 * drops the stream now and then and resumes it after the last id seen on the other front, and approves every
 * open ticket through the front it did not submit on, until the run is done.
 */
export async function driveRun(
  fronts: readonly [FleetClient, FleetClient],
  threadId: string,
  plan: FleetPlan,
  random: SeededRandom,
): Promise<DrivenRun> {
  let front = random.integer(0, 1);
  const other = () => fronts[1 - front] as FleetClient;
  const { runId } = await (fronts[front] as FleetClient).send({ threadId, input: planText(plan) });
  const driven: DrivenRun = {
    threadId,
    plan,
    runId,
    seen: [],
    reconnects: 0,
    approvedAt: new Map(),
    ended: undefined,
  };
  const deadline = Date.now() + followTimeoutMs * (plan.steps.length + 1);
  try {
    for (;;) {
      const ended = await followUntilRunEnd(
        fronts,
        () => front,
        (next) => {
          front = next;
        },
        driven,
        random,
        deadline,
      );
      driven.ended = ended;
      if (ended.status !== 'waiting') return driven;
      const decisions = ended.openTickets.map((ticket) => {
        driven.approvedAt.set(ticket.toolCallId, Date.now());
        return { decisionId: `approve-${ticket.id}`, ticketId: ticket.id, action: 'resume' as const };
      });
      await other().decide(threadId, decisions);
    }
  } catch (error) {
    driven.error = String((error as Error)?.message ?? error);
    return driven;
  }
}

/** Follows the run until its next `run-end`, dropping and resuming the stream on the other front at random. */
async function followUntilRunEnd(
  fronts: readonly [FleetClient, FleetClient],
  current: () => number,
  switchTo: (front: number) => void,
  driven: DrivenRun,
  random: SeededRandom,
  deadline: number,
): Promise<Extract<AgentEvent, { type: 'run-end' }>> {
  for (;;) {
    if (Date.now() > deadline) throw new Error(`no run-end within ${followTimeoutMs / 1000} s per step`);
    const dropAfter = random.chance(0.5) ? random.integer(1, 6) : Number.POSITIVE_INFINITY;
    const stream = new AbortController();
    const timeout = AbortSignal.timeout(Math.max(1, deadline - Date.now()));
    const signal = AbortSignal.any([stream.signal, timeout]);
    const after = driven.seen.at(-1)?.id;
    let received = 0;
    for await (const record of (fronts[current()] as FleetClient).events(driven.runId, {
      signal,
      ...(after === undefined ? {} : { after }),
    })) {
      driven.seen.push(record);
      if (record.event.type === 'run-end') return record.event;
      if (++received >= dropAfter) {
        stream.abort();
        break;
      }
    }
    if (timeout.aborted) continue;
    // Dropped (or the subscription ended without a run-end): resume after the last id on the other front.
    driven.reconnects++;
    switchTo(1 - current());
  }
}
