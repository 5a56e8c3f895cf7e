import type { RunRecord, SuspensionTicket, TerminationReason, Usage } from '@lunation/contract';

/** A run as the API lists it (its record without the run-scoped state). */
export interface RunSummary {
  runId: string;
  agentId: string;
  parentRunId: string | null;
  status: RunRecord['status'];
  termination: TerminationReason | null;
  steps: number;
  usage: Usage;
  openTickets: SuspensionTicket[];
  finalText: string | null;
  createdAt: number;
  updatedAt: number;
}

/** The summary of a run record. */
export function runSummary(run: RunRecord): RunSummary {
  return {
    runId: run.identity.runId,
    agentId: run.identity.agentId,
    parentRunId: run.identity.parentRunId ?? null,
    status: run.status,
    termination: run.termination ?? null,
    steps: run.steps,
    usage: run.usage,
    openTickets: run.openTickets,
    finalText: run.finalText ?? null,
    createdAt: run.createdAt,
    updatedAt: run.updatedAt,
  };
}
