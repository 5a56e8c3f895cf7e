import {
  LunationError,
  type ResumeDecision,
  resumeDecisionSchema,
  type SuspensionTicket,
} from '@lunation/contract';
import { z } from 'zod';
import type { ToolCallRecord } from './loop/call-records.js';
import { MAX_JSON_DEPTH } from './loop/storable.js';
import { formatIssues } from './tool.js';

// Decisions at the boundary: checked (shape, open ticket, one per ticket, payload) before a run is started with
// them, changing nothing when they fail. The loop's resume stage (`loop/tool-calls.ts`) applies them.

/**
 * The boundary check of a decision request, before anything else: each decision's shape (and a payload not
 * absurdly deep), and one decision per ticket (a repeated decision id is a retry, not a second decision).
 */
export function validateDecisionShapes(decisions: ResumeDecision[]): ResumeDecision[] {
  if (!Array.isArray(decisions)) throw new LunationError('decision-invalid', 'Decisions must be an array');
  for (const [index, decision] of decisions.entries()) {
    if (nestingDepth((decision as { payload?: unknown } | null)?.payload, 0) > MAX_JSON_DEPTH) {
      throw new LunationError(
        'decision-invalid',
        `Decision #${index}: the payload is nested deeper than ${MAX_JSON_DEPTH} levels`,
      );
    }
    const parsed = resumeDecisionSchema.safeParse(decision);
    if (!parsed.success) {
      throw new LunationError(
        'decision-invalid',
        `Decision #${index} is malformed: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
      );
    }
  }
  const deciding = new Map<string, { decisionId: string; index: number }>();
  for (const [index, { decisionId, ticketId }] of decisions.entries()) {
    const earlier = deciding.get(ticketId);
    if (earlier !== undefined && earlier.decisionId !== decisionId) {
      throw new LunationError(
        'decision-invalid',
        `Decisions #${earlier.index} and #${index} both decide ticket "${ticketId}"; send one decision per ticket`,
        { details: { ticketId, decisionIds: [earlier.decisionId, decisionId] } },
      );
    }
    deciding.set(ticketId, { decisionId, index });
  }
  return decisions;
}

/**
 * Splits decisions (already through {@link validateDecisionShapes}) into fresh ones and already-applied ones
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

function nestingDepth(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null || depth > MAX_JSON_DEPTH) return depth;
  let deepest = depth + 1;
  try {
    for (const key in value) {
      deepest = Math.max(deepest, nestingDepth((value as Record<string, unknown>)[key], depth + 1));
    }
  } catch {
    return MAX_JSON_DEPTH + 1;
  }
  return deepest;
}
