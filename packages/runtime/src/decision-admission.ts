import {
  type JsonSchema,
  LunationError,
  type ResumeDecision,
  type SuspensionTicket,
} from '@lunation/contract';
import { toolCallRecords, upgradeThreadState } from './loop/call-records.js';
import { appliedDecisionsKey } from './runtime-keys.js';
import { formatIssues, jsonSchemaValidator } from './tool.js';

// The one admission of decisions, local or through a fleet: who may decide on a thread (the owner rule), which
// decisions name its open tickets with fitting payloads, which were applied before, and what stays undecided.
// The executor admits them once the thread is leased and loaded, before a run is started with them, changing
// nothing when they fail; a fleet's client admits them against the store before it submits them (the worker
// admits them again, under the lease). Their shapes were checked at the door (`validateDecisionShapes` in
// `executor/run-options.ts`); the loop's resume stage (`loop/tool-calls.ts`) applies them.

/** Who asks for a thread, and so which threads are theirs ({@link ownsThread}). */
export interface ThreadCaller {
  /** The caller's owner (tenant): a thread of another owner is not theirs. Absent: every thread is. */
  resourceId?: string | undefined;
  /** With `resourceId`: a thread without an owner is not theirs either. @default false */
  ownedOnly?: boolean | undefined;
}

/**
 * The owner rule: whether the caller may see and act on a thread with this owner (`resourceId`). A thread of
 * another owner is not theirs; one without an owner is, unless the caller asks for `ownedOnly`.
 */
export function ownsThread(thread: { resourceId?: string | undefined }, caller: ThreadCaller): boolean {
  const { resourceId } = caller;
  if (resourceId === undefined) return true;
  return thread.resourceId === undefined ? caller.ownedOnly !== true : thread.resourceId === resourceId;
}

/** What {@link admitDecisions} decided. */
export interface DecisionAdmission {
  /** The decisions to apply, in order. */
  fresh: ResumeDecision[];
  /** The ids of decisions applied before (or repeated in the same list): nothing to do for them. */
  ignored: string[];
  /** The thread's open tickets before the decisions. */
  open: SuspensionTicket[];
  /** The open tickets that no fresh decision decides: the run waits again while any stay. */
  undecided: SuspensionTicket[];
}

/**
 * Admits decisions (their shapes already checked) against a thread's state: splits them into fresh ones and
 * already-applied ones (ignored) and tells which open tickets stay undecided; throws, changing nothing, on a
 * decision for a ticket that is not open (`unknown-ticket`) or a payload failing the ticket's schema
 * (`decision-invalid`).
 */
export function admitDecisions(
  threadState: Readonly<Record<string, unknown>>,
  decisions: ResumeDecision[],
): DecisionAdmission {
  const records = toolCallRecords(upgradeThreadState(threadState as Record<string, unknown>));
  const applied = new Set((threadState[appliedDecisionsKey.name] ?? []) as string[]);
  const open = new Map<string, SuspensionTicket>();
  const recorded = new Set<string>();
  for (const record of Object.values(records)) {
    if (record.status === 'suspended' && record.ticket) open.set(record.ticket.id, record.ticket);
    if (record.decision) recorded.add(record.decision.decisionId);
  }
  const fresh: ResumeDecision[] = [];
  const ignored: string[] = [];
  const decided = new Set<string>();
  for (const decision of decisions) {
    const { decisionId } = decision;
    if (applied.has(decisionId) || recorded.has(decisionId) || decided.has(decisionId)) {
      ignored.push(decisionId);
      continue;
    }
    const ticket = open.get(decision.ticketId);
    if (!ticket) {
      throw new LunationError(
        'unknown-ticket',
        `Decision "${decisionId}" names ticket "${decision.ticketId}", which is not open on this thread`,
        { details: { ticketId: decision.ticketId, openTickets: [...open.keys()] } },
      );
    }
    if (decision.action === 'resume' && ticket.responseSchema) checkPayload(decision, ticket);
    decided.add(decisionId);
    fresh.push(decision);
  }
  const tickets = [...open.values()];
  const undecided = tickets.filter((ticket) => !fresh.some((decision) => decision.ticketId === ticket.id));
  return { fresh, ignored, open: tickets, undecided };
}

function checkPayload(decision: ResumeDecision, ticket: SuspensionTicket): void {
  const parsed = jsonSchemaValidator(ticket.responseSchema as JsonSchema).safeParse(decision.payload ?? null);
  if (parsed.success) return;
  throw new LunationError(
    'decision-invalid',
    `Decision "${decision.decisionId}": the payload does not match ticket "${ticket.id}"'s response schema: ${formatIssues(parsed.error, '(payload)')}`,
    { details: { ticketId: ticket.id } },
  );
}
