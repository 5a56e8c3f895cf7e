import type { AgentEvent, RunEventRecord } from '@lunation/contract';
import type { FrontPool } from './front-pool.js';

/** How a user's client treats fronts that are slow, stalled or gone. */
export interface UserClientOptions {
  /** A request without an answer (its headers) this long is given up and retried on the other front. */
  requestTimeoutMs: number;
  /** A stream silent this long (no event, no keep-alive) is dropped and resumed on the other front. */
  idleTimeoutMs: number;
}

/** An answer of a front: which slot gave it and after how many attempts. */
export interface FrontAnswer {
  response: Response;
  slot: number;
  /** Attempts that failed before it (no front, refused, timed out, 5xx). */
  retried: number;
}

/** A stream a front dropped or that went silent: resume it elsewhere. */
export class StreamLost extends Error {
  override readonly name = 'StreamLost';
}

/**
 * What a browser or an app does with a fleet's HTTP fronts: each request goes to a front and, when that front
 * does not answer in time (stalled, killed, starting), to the other one — with the same idempotency (client run
 * ids, decision ids, cancels naming their run), so a request that did reach a stalled front and is applied late
 * changes nothing. Streams are read with an idle timeout over the fronts' keep-alive comments.
 */
export class FleetUserClient {
  /** Requests given up on one front and retried on the other. */
  retries = 0;

  constructor(
    private readonly fronts: FrontPool,
    private readonly options: UserClientOptions,
  ) {}

  /** Sends `body` as JSON (or GETs without one) to `slot`'s front, failing over until `deadline`. */
  async call(
    slot: number,
    path: string,
    init: { method: 'GET' | 'POST'; body?: unknown; headers?: Record<string, string> },
    deadline: number,
  ): Promise<FrontAnswer> {
    let retried = 0;
    let last = 'no attempt';
    for (let current = slot; Date.now() < deadline; current = 1 - current) {
      const base = this.fronts.url(current);
      if (base !== undefined) {
        const abort = new AbortController();
        const timer = setTimeout(() => abort.abort(), this.options.requestTimeoutMs);
        try {
          const response = await fetch(`${base}${path}`, {
            method: init.method,
            headers: { 'content-type': 'application/json', ...init.headers },
            signal: abort.signal,
            ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
          });
          if (response.status < 500) return { response, slot: current, retried };
          last = `${response.status} ${await response.text()}`;
        } catch (error) {
          last = abort.signal.aborted
            ? `no answer within ${this.options.requestTimeoutMs} ms`
            : String(error);
        } finally {
          clearTimeout(timer);
        }
      } else {
        last = `front ${current} is starting`;
      }
      retried++;
      this.retries++;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`${init.method} ${path} got no answer before the user's deadline (last: ${last})`);
  }

  /** POSTs and reads the JSON answer; the status is the caller's to judge. */
  async json(
    slot: number,
    path: string,
    body: unknown,
    deadline: number,
  ): Promise<{ status: number; body: unknown; retried: number }> {
    const answer = await this.call(slot, path, { method: 'POST', body }, deadline);
    const text = await answer.response.text();
    return {
      status: answer.response.status,
      body: text === '' ? undefined : JSON.parse(text),
      retried: answer.retried,
    };
  }

  /**
   * The run's events from an answer that streams them (`text/event-stream`), each with its log id; a leading
   * `run-submitted` (no id) is skipped. Throws {@link StreamLost} when the stream ends early or goes silent.
   */
  async *records(answer: FrontAnswer, signal: AbortSignal): AsyncGenerator<RunEventRecord> {
    const body = answer.response.body;
    if (!body) throw new StreamLost('the answer has no body');
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    const cancel = () => void reader.cancel().catch(() => {});
    signal.addEventListener('abort', cancel, { once: true });
    let buffered = '';
    try {
      for (;;) {
        let timer: NodeJS.Timeout | undefined;
        const silent = new Promise<'silent'>((resolve) => {
          timer = setTimeout(() => resolve('silent'), this.options.idleTimeoutMs);
        });
        const read = await Promise.race([reader.read(), silent]).finally(() => clearTimeout(timer));
        if (read === 'silent')
          throw new StreamLost(`no event or keep-alive for ${this.options.idleTimeoutMs} ms`);
        if (read.done) {
          if (signal.aborted) return;
          throw new StreamLost('the front ended the stream before the run-end');
        }
        buffered += read.value;
        let end = buffered.indexOf('\n\n');
        while (end >= 0) {
          const record = parseBlock(buffered.slice(0, end));
          buffered = buffered.slice(end + 2);
          if (record) yield record;
          end = buffered.indexOf('\n\n');
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof StreamLost) throw error;
      throw new StreamLost(`the stream broke: ${String(error)}`);
    } finally {
      signal.removeEventListener('abort', cancel);
      cancel();
    }
  }
}

/** One SSE block as a record of the run's log; undefined for comments and events without an id. */
function parseBlock(block: string): RunEventRecord | undefined {
  let id: string | undefined;
  let data = '';
  for (const line of block.split('\n')) {
    if (line.startsWith('id: ')) id = line.slice(4);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (id === undefined || data === '') return undefined;
  return { id, event: JSON.parse(data) as AgentEvent };
}
