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
