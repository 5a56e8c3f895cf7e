import type {
  MessageRecord,
  RunStatus,
  SuspensionTicket,
  TerminationReason,
  ThreadRecord,
  Usage,
} from '@lunation/contract';

export type { MessageRecord, SuspensionTicket, ThreadRecord };

/** `GET /threads/:id`. */
export interface ThreadAnswer {
  thread: ThreadRecord;
  latestRun: {
    runId: string;
    status: RunStatus;
    termination: TerminationReason | null;
    openTickets: SuspensionTicket[];
  } | null;
}

/** A run as `GET /threads/:id/runs` lists it. */
export interface RunSummary {
  runId: string;
  agentId: string;
  parentRunId: string | null;
  status: RunStatus;
  termination: TerminationReason | null;
  steps: number;
  usage: Usage;
  openTickets: SuspensionTicket[];
  finalText: string | null;
  createdAt: number;
  updatedAt: number;
}

/** Which runtime process ran a part of a run. */
export interface Worker {
  owner: string;
  incarnation: string;
}

/** One entry of `GET /threads/:id/runs/:runId/timeline`. */
export type TimelineEntry =
  | { kind: 'run-created'; at: number }
  | {
      kind: 'step';
      at: number;
      step: number;
      leaseToken: number | null;
      worker: Worker | null;
      model: { latencyMs: number | null; usage: Usage } | null;
      stopReason: string | null;
    }
  | { kind: 'checkpoint'; at: number; step: number; messages: number }
  | { kind: 'message'; at: number; seq: number; role: 'user' | 'assistant' | 'tool' | 'system' }
  | {
      kind: 'tool';
      at: number;
      toolCallId: string;
      toolName: string;
      status: 'in-flight' | 'completed';
      attempts: number;
      rerun: boolean;
      fromLedger: boolean;
      startedAt: number;
      completedAt: number | null;
      durationMs: number | null;
      isError: boolean;
    }
  | { kind: 'suspended'; at: number; step: number; tickets: Array<{ ticketId: string; toolName: string }> }
  | { kind: 'resumed'; at: number; step: number; worker: Worker | null }
  | {
      kind: 'lease-takeover';
      at: number;
      step: number;
      fromToken: number;
      toToken: number;
      from: Worker | null;
      to: Worker | null;
    }
  | { kind: 'run-ended'; at: number; status: RunStatus; termination: TerminationReason | null };

/** `GET /threads/:id/runs/:runId/timeline`. */
export interface TimelineAnswer {
  run: RunSummary;
  entries: TimelineEntry[];
}

/** A thread waiting for a decision, as `GET /inbox` lists it. */
export interface InboxThread {
  thread: ThreadRecord;
  runId: string;
  tickets: Array<{
    ticketId: string;
    toolCallId: string;
    toolName: string;
    arguments: unknown;
    action: string;
    message: string;
  }>;
}
