import type { AgentEvent, RunEventLog } from '@lunation/contract';

/**
 * Copies one run's events into its cross-process log, in order, one append in flight at a time: events that
 * arrive while an append is out go together in the next one, so a fast run costs few round trips.
 */
export class EventPipe {
  private batch: AgentEvent[] = [];
  private flushing: Promise<void> | undefined;
  private failure: unknown;

  constructor(
    private readonly log: RunEventLog,
    private readonly runId: string,
  ) {}

  /** Queues an event; it is appended after every event queued before it. */
  push(event: AgentEvent): void {
    this.batch.push(event);
    this.flushing ??= this.drain();
  }

  /** Resolves once every queued event is appended; rejects with the first append's failure. */
  async flush(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
    if (this.failure !== undefined) throw this.failure;
  }

  private async drain(): Promise<void> {
    try {
      while (this.batch.length > 0 && this.failure === undefined) {
        const events = this.batch;
        this.batch = [];
        await this.log.appendEvents(this.runId, events);
      }
    } catch (error) {
      this.failure = error;
    } finally {
      this.flushing = undefined;
    }
  }
}

/** Copies every event of `events` (a run's stream) into the log; resolves once the last one is appended. */
export async function pipeEvents(
  log: RunEventLog,
  runId: string,
  events: AsyncIterable<AgentEvent>,
): Promise<void> {
  const pipe = new EventPipe(log, runId);
  for await (const event of events) pipe.push(event);
  await pipe.flush();
}
