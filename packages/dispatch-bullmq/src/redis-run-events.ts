import type { AgentEvent, RunEventPage, RunEventRecord } from '@lunation/contract';
import { eventLogEndedError, staleEventFenceError } from '@lunation/contract/dispatch-utils';
import type { DispatchContext } from './dispatch-context.js';
import { dispatchScripts } from './dispatch-scripts.js';
import type { StreamWaiter } from './stream-waiter.js';

/** Events a subscription reads per round trip. */
const batchSize = 256;

/**
 * Run event logs as Redis Streams: one stream per run, entry ids `0-<n>` (the event id is `n`), trimmed with
 * `MAXLEN`, an `end` entry as the end mark (it also wakes blocked readers), `PEXPIRE` once ended. The meta hash
 * keeps the log's fence and position, checked by the append script.
 */
export class RedisRunEvents {
  constructor(
    private readonly context: DispatchContext,
    private readonly waiter: () => StreamWaiter,
  ) {}

  /** Appends under the contract's fencing rules (one script); resolves the ids of the events it appended. */
  async append(runId: string, events: readonly AgentEvent[], fence: number | undefined): Promise<string[]> {
    const { keys, policy } = this.context;
    const [status, ...rest] = (await this.context.run(
      dispatchScripts.appendEvents,
      [keys.events(runId), keys.eventsMeta(runId)],
      [
        policy.maxEventsPerRun,
        fence ?? '',
        events.length,
        ...events.map((event) => event.seq ?? 0),
        ...events.map((event) => JSON.stringify(event)),
      ],
    )) as number[];
    if (status === 1) throw eventLogEndedError(runId);
    if (status === 2) throw staleEventFenceError(runId, fence as number, Number(rest[0]));
    return rest.map(String);
  }

  async read(runId: string, after: number, limit: number): Promise<RunEventPage> {
    const { keys } = this.context;
    const [flat, ended] = (await this.context.run(
      dispatchScripts.readEvents,
      [keys.events(runId), keys.eventsMeta(runId)],
      [after, limit],
    )) as [string[], number];
    const events: RunEventRecord[] = [];
    for (let index = 0; index < flat.length; index += 2) {
      events.push({ id: flat[index] as string, event: JSON.parse(flat[index + 1] as string) as AgentEvent });
    }
    return { events, ended: ended === 1 };
  }

  async end(runId: string, ttlMs: number, fence: number | undefined): Promise<void> {
    const { keys, policy } = this.context;
    const [status, logFence] = (await this.context.run(
      dispatchScripts.endEvents,
      [keys.events(runId), keys.eventsMeta(runId)],
      [ttlMs, policy.maxEventsPerRun, fence ?? ''],
    )) as number[];
    if (status === 2) throw staleEventFenceError(runId, fence as number, Number(logFence));
  }

  /** Every event after `after`, then each new one, until the end mark or the signal. */
  async *subscribe(runId: string, after: number, signal: AbortSignal): AsyncGenerator<RunEventRecord> {
    const key = this.context.keys.events(runId);
    let position = after;
    while (!signal.aborted) {
      let page: RunEventPage;
      try {
        page = await this.read(runId, position, batchSize);
      } catch (error) {
        // Closing the dispatcher (or aborting) while a read is on its way ends the subscription quietly.
        if (signal.aborted) return;
        throw error;
      }
      for (const record of page.events) {
        if (signal.aborted) return;
        position = Number(record.id);
        yield record;
      }
      if (page.ended) return;
      if (page.events.length === 0) await this.waiter().wait(key, position, signal);
    }
  }
}
