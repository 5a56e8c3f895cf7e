import { type AgentEvent, LunationError, type RunEventRecord } from '@lunation/contract';
import type { FleetClient } from '@lunation/fleet';
import { type FleetPlan, planText } from '../../fixtures/fleet-agent.js';
import type { SeededRandom } from '../../fixtures/seeded-random.js';
import type { CancelMoment, RunPlan } from './fleet-plans.js';

/** A cancel the user asked for: when it was asked and when the front answered it. */
export interface UserCancel {
  moment: CancelMoment;
  requestedAt: number;
  /** When `FleetClient.cancel` resolved: the request was durable from then on. */
  answeredAt: number;
  /** The user had already seen the run's final `run-end` (status `done`) when it cancelled. */
  sawEnd: boolean;
  error?: string;
}

/** What the fleet test saw of one run, as its user. */
export interface DrivenRun {
  threadId: string;
  plan: FleetPlan;
  runId: string;
  /** Every event the user's streams delivered, across drops and reconnections, in arrival order. */
  seen: RunEventRecord[];
  /** How often the stream was dropped and resumed (after the last id seen) on the other front. */
  reconnects: number;
  /** When each call's first approval was submitted, by tool call id (before the submission). */
  approvedAt: Map<string, number>;
  /** Calls the run asked to approve again after their approval was submitted (a decision that did not hold). */
  askedAgain: string[];
  cancels: UserCancel[];
  /** How the run ended, as its last `run-end` said. */
  ended: Extract<AgentEvent, { type: 'run-end' }> | undefined;
  error?: string;
}

/**
 * Plays a user of the fleet for one run: submits the plan through one front, follows the run's events, drops
 * the stream now and then and resumes it after the last id seen on the other front, approves every open ticket
 * through the other front until the run is done, and cancels it through the other front when the plan says.
 */
export async function driveRun(
  fronts: readonly [FleetClient, FleetClient],
  threadId: string,
  runPlan: RunPlan,
  random: SeededRandom,
  timeoutMs: number,
): Promise<DrivenRun> {
  const { plan } = runPlan;
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
    askedAgain: [],
    cancels: [],
    ended: undefined,
  };
  const cancel = async (moment: CancelMoment) => {
    const requestedAt = Date.now();
    const sawEnd = driven.ended?.status === 'done';
    try {
      await other().cancel(threadId, { runId, reason: `the fleet test cancels ${plan.label} (${moment})` });
      driven.cancels.push({ moment, requestedAt, answeredAt: Date.now(), sawEnd });
    } catch (error) {
      driven.cancels.push({ moment, requestedAt, answeredAt: Date.now(), sawEnd, error: String(error) });
    }
  };
  let timer: NodeJS.Timeout | undefined;
  let cancelling: Promise<void> | undefined;
  if (runPlan.cancel === 'running') {
    timer = setTimeout(() => {
      cancelling = cancel('running');
    }, runPlan.cancelAfterMs);
  }
  const deadline = Date.now() + timeoutMs;
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
      if (ended.status !== 'waiting') break;
      if (runPlan.cancel === 'waiting' && driven.cancels.length === 0) await cancel('waiting');
      const decisions = ended.openTickets.map((ticket) => {
        if (driven.approvedAt.has(ticket.toolCallId)) driven.askedAgain.push(ticket.toolCallId);
        else driven.approvedAt.set(ticket.toolCallId, Date.now());
        return { decisionId: `approve-${ticket.id}`, ticketId: ticket.id, action: 'resume' as const };
      });
      try {
        await other().decide(threadId, decisions);
      } catch (error) {
        // A cancel may have ended the waiting run meanwhile: its `run-end` is still to come.
        if (!LunationError.hasCode(error, 'not-found') || driven.cancels.length === 0) throw error;
      }
    }
    clearTimeout(timer);
    await cancelling;
    if (runPlan.cancel === 'after-end') await cancel('after-end');
  } catch (error) {
    clearTimeout(timer);
    await cancelling;
    driven.error = String((error as Error)?.message ?? error);
  }
  return driven;
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
    if (Date.now() > deadline) {
      throw new Error(
        `no run-end within the run's timeout (last event: ${driven.seen.at(-1)?.event.type ?? 'none'})`,
      );
    }
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
