import type { AgentEvent, RunEventRecord } from '@lunation/contract';
import { type FleetPlan, planText } from '../../fixtures/fleet-agent.js';
import type { SeededRandom } from '../../fixtures/seeded-random.js';
import type { CancelMoment, RunPlan } from './fleet-plans.js';
import { type FleetUserClient, type FrontAnswer, StreamLost } from './fleet-user-client.js';

/** A cancel the user asked for: when it was asked and when the front answered it. */
export interface UserCancel {
  moment: CancelMoment;
  requestedAt: number;
  /** When a front answered it (after retries on the other front): the request was durable from then on. */
  answeredAt: number;
  /** The front's answer: `cancelled` (202) or not (200, the run had ended). */
  cancelled?: boolean;
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
  /** How often the stream was dropped (or went silent) and resumed (after the last id seen) on the other front. */
  reconnects: number;
  /** Requests of this run's user that a front did not answer in time and that were retried on the other. */
  retried: number;
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
 * Plays a user of the fleet for one run, through its HTTP fronts: sends the message (with a run id of its own,
 * so a retry on the other front starts one run) and reads the run's events from that answer, drops the stream now
 * and then (and whenever a front goes silent) and resumes it after the last id seen on the other front, approves
 * every open ticket through the other front until the run is done, and cancels it, naming the run, through the
 * other front when the plan says. A front that does not answer in time gets the request retried on the other.
 */
export async function driveRun(
  client: FleetUserClient,
  threadId: string,
  runPlan: RunPlan,
  random: SeededRandom,
  timeoutMs: number,
): Promise<DrivenRun> {
  const { plan } = runPlan;
  const deadline = Date.now() + timeoutMs;
  const runId = `${threadId}.${plan.label}`;
  let front = random.integer(0, 1);
  const driven: DrivenRun = {
    threadId,
    plan,
    runId,
    seen: [],
    reconnects: 0,
    retried: 0,
    approvedAt: new Map(),
    askedAgain: [],
    cancels: [],
    ended: undefined,
  };
  const cancel = async (moment: CancelMoment) => {
    const requestedAt = Date.now();
    const sawEnd = driven.ended?.status === 'done';
    try {
      const answer = await client.json(1 - front, `/threads/${threadId}/cancel`, { runId }, deadline);
      driven.retried += answer.retried;
      if (answer.status !== 200 && answer.status !== 202) {
        throw new Error(`cancel answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      }
      const { cancelled } = answer.body as { cancelled: boolean };
      driven.cancels.push({ moment, requestedAt, answeredAt: Date.now(), sawEnd, cancelled });
    } catch (error) {
      driven.cancels.push({ moment, requestedAt, answeredAt: Date.now(), sawEnd, error: String(error) });
    }
  };
  let timer: NodeJS.Timeout | undefined;
  let cancelling: Promise<void> | undefined;
  try {
    const sent = await client.call(
      front,
      `/threads/${threadId}/messages`,
      { method: 'POST', body: { text: planText(plan), runId } },
      deadline,
    );
    driven.retried += sent.retried;
    front = sent.slot;
    if (sent.response.status !== 200) {
      throw new Error(`the message was answered ${sent.response.status}: ${await sent.response.text()}`);
    }
    if (runPlan.cancel === 'running') {
      timer = setTimeout(() => {
        cancelling = cancel('running');
      }, runPlan.cancelAfterMs);
    }
    let answer: FrontAnswer | undefined = sent;
    for (;;) {
      const ended = await followUntilRunEnd(
        client,
        answer,
        () => front,
        (next) => {
          front = next;
        },
        driven,
        random,
        deadline,
      );
      answer = undefined;
      driven.ended = ended;
      if (ended.status !== 'waiting') break;
      if (runPlan.cancel === 'waiting' && driven.cancels.length === 0) await cancel('waiting');
      const decisions = ended.openTickets.map((ticket) => {
        if (driven.approvedAt.has(ticket.toolCallId)) driven.askedAgain.push(ticket.toolCallId);
        else driven.approvedAt.set(ticket.toolCallId, Date.now());
        return { decisionId: `approve-${ticket.id}`, ticketId: ticket.id, action: 'resume' as const };
      });
      const decided = await client.call(
        1 - front,
        `/threads/${threadId}/decisions`,
        { method: 'POST', body: { decisions } },
        deadline,
      );
      driven.retried += decided.retried;
      const status = decided.response.status;
      const text = (await decided.response.body?.cancel().then(() => '')) ?? '';
      // The tickets were decided already: by this user's earlier attempt (a stalled front applied it late), or a
      // cancel ended the waiting run meanwhile; either way the run's events go on in its log.
      // (400 `unknown-ticket` when the front saw the run resumed or ended, 404 when it ended between its reads.)
      const settled =
        (status === 400 || status === 404) && (decided.retried > 0 || driven.cancels.length > 0);
      if (status !== 200 && status !== 202 && !settled) {
        throw new Error(`the decisions were answered ${status} ${text}`);
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

/**
 * Follows the run until its next `run-end`: from `answer` (the message's own stream) first, then through
 * `GET …/runs/:runId/events` after the last id seen; drops the stream at random, and on a silent or broken one
 * resumes on the other front.
 */
async function followUntilRunEnd(
  client: FleetUserClient,
  first: FrontAnswer | undefined,
  current: () => number,
  switchTo: (front: number) => void,
  driven: DrivenRun,
  random: SeededRandom,
  deadline: number,
): Promise<Extract<AgentEvent, { type: 'run-end' }>> {
  let answer = first;
  for (;;) {
    if (Date.now() > deadline) {
      throw new Error(
        `no run-end within the run's timeout (last event: ${driven.seen.at(-1)?.event.type ?? 'none'})`,
      );
    }
    if (answer === undefined) {
      const after = driven.seen.at(-1)?.id;
      answer = await client.call(
        current(),
        `/threads/${driven.threadId}/runs/${driven.runId}/events`,
        { method: 'GET', ...(after === undefined ? {} : { headers: { 'last-event-id': after } }) },
        deadline,
      );
      driven.retried += answer.retried;
      switchTo(answer.slot);
      if (answer.response.status === 404) {
        // Not started by a worker yet (the run is found once its first commit lands): ask again shortly.
        await answer.response.body?.cancel();
        answer = undefined;
        await new Promise((resolve) => setTimeout(resolve, 200));
        continue;
      }
      if (answer.response.status !== 200) {
        throw new Error(
          `the run's events were answered ${answer.response.status}: ${await answer.response.text()}`,
        );
      }
    }
    const dropAfter = random.chance(0.5) ? random.integer(1, 6) : Number.POSITIVE_INFINITY;
    const stream = new AbortController();
    let received = 0;
    try {
      for await (const record of client.records(answer, stream.signal)) {
        driven.seen.push(record);
        if (record.event.type === 'run-end') return record.event;
        if (++received >= dropAfter) {
          stream.abort();
          break;
        }
      }
    } catch (error) {
      if (!(error instanceof StreamLost)) throw error;
    }
    answer = undefined;
    // Dropped, silent or broken: resume after the last id on the other front.
    driven.reconnects++;
    switchTo(1 - current());
  }
}
