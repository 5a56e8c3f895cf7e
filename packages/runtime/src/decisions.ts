import { LunationError, type ResumeDecision, type SuspensionTicket } from '@lunation/contract';
import { z } from 'zod';
import type { ToolCallRecord } from './loop/call-records.js';
import { formatIssues } from './tool.js';

// Decisions against the thread they decide: each names an open ticket and its payload fits the ticket, checked
// once the thread is leased and loaded, before a run is started with them, changing nothing when they fail.
// Their shapes were checked at the door (`validateDecisionShapes` in `executor/run-options.ts`); the loop's
// resume stage (`loop/tool-calls.ts`) applies them.

/**
 * Splits decisions (their shapes already checked)  into fresh ones and already-applied ones
 * (ignored); throws, changing nothing, on a decision for a ticket that is not open or a payload failing the
 * ticket's schema.
 */
export function checkDecisions(
  decisions: ResumeDecision[],
  records: Readonly<Record<string, ToolCallRecord>>,
  applied: ReadonlySet<string>,
): { fresh: ResumeDecision[]; ignored: string[] } {
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
    if (
      applied.has(decision.decisionId) ||
      recorded.has(decision.decisionId) ||
      decided.has(decision.decisionId)
    ) {
      ignored.push(decision.decisionId);
      continue;
    }
    const ticket = open.get(decision.ticketId);
    if (!ticket) {
      throw new LunationError(
        'unknown-ticket',
        `Decision "${decision.decisionId}" names ticket "${decision.ticketId}", which is not open on this thread`,
        { details: { ticketId: decision.ticketId, openTickets: [...open.keys()] } },
      );
    }
    if (decision.action === 'resume' && ticket.responseSchema) checkPayload(decision, ticket);
    decided.add(decision.decisionId);
    fresh.push(decision);
  }
  return { fresh, ignored };
}

function checkPayload(decision: ResumeDecision, ticket: SuspensionTicket): void {
  const schema = z.fromJSONSchema(ticket.responseSchema as Parameters<typeof z.fromJSONSchema>[0]);
  const parsed = schema.safeParse(decision.payload ?? null);
  if (parsed.success) return;
  throw new LunationError(
    'decision-invalid',
    `Decision "${decision.decisionId}": the payload does not match ticket "${ticket.id}"'s response schema: ${formatIssues(parsed.error, '(payload)')}`,
    { details: { ticketId: ticket.id } },
  );
}
