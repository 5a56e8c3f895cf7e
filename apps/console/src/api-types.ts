import type {
  MessageRecord,
  RunStatus,
  SuspensionTicket,
  TerminationReason,
  ThreadRecord,
} from '@lunation/contract';

// The API's answers, typed by the package that serves them (type-only: nothing of it is bundled).
export type {
  InboxThread,
  RunSummary,
  RunTimeline,
  TimelineEntry,
  TimelineWorker,
} from '@lunation/http';
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

/** One checkpoint of `GET /threads/:id/checkpoints`: the thread after one of its steps (`listCheckpoints`). */
export interface Checkpoint {
  checkpoint: number;
  runId: string;
  step: number;
  messageCount: number;
  complete: boolean;
  at: number;
  text: string;
  calls: Array<{ toolCallId: string; toolName: string; answered: boolean }>;
  input?: string;
  modelMs?: number;
}

/** `POST /threads/:id/fork`. */
export interface ForkAnswer {
  threadId: string;
  thread: ThreadRecord;
  messageCount: number;
  settled: Array<{ toolCallId: string; toolName: string; outcome: 'recorded' | 'not-run' }>;
  rerun: Array<{ toolCallId: string; toolName: string }>;
  runId: string | null;
}

/** Where a fork came from: its `metadata.forkedFrom`. */
export interface ForkOrigin {
  threadId: string;
  checkpoint: number;
  messageCount: number;
}
