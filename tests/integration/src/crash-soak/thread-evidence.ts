import type { LunationStore, MessageRecord, RunRecord, ToolExecution } from '@lunation/contract';

/** What the store holds for one soak thread at the end. */
export interface ThreadEvidence {
  messages: MessageRecord[];
  /** Oldest first. */
  runs: RunRecord[];
  threadState: Record<string, unknown>;
  /** Ledger entries of every run of the thread. */
  ledger: ToolExecution[];
}

export async function readThreadEvidence(store: LunationStore, threadId: string): Promise<ThreadEvidence> {
  const runs: RunRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.listRuns(threadId, cursor === undefined ? {} : { cursor });
    runs.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  const ledger: ToolExecution[] = [];
  for (const run of runs) ledger.push(...(await store.listToolExecutions(run.identity.runId)));
  return {
    messages: await store.listMessages(threadId),
    runs,
    threadState: await store.getThreadState(threadId),
    ledger,
  };
}
