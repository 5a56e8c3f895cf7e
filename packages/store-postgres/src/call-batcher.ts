import type { Statement } from './postgres-statements.js';

/** Runs one statement and answers the `j` column of each row (rows whose `j` is NULL left out). */
export type Executor = (statement: Statement, values: unknown[]) => Promise<string[]>;

/** When the store sends several calls in one round trip. */
export type CallBatching = 'auto' | 'always' | 'off';

/** What the batch function answers per call: its `j` value, or the error it raised (rolled back alone). */
type BatchAnswer = { r: string | null } | { e: string; m: string; d: string | null };

interface Waiting {
  statement: Statement;
  values: unknown[];
  resolve(rows: string[]): void;
  reject(error: unknown): void;
}

/**
 * Group commit for the store's calls. While fewer than `connections` calls are in flight, a call is sent at
 * once, as its own statement. When every connection is busy, calls wait here instead of in the pool, and each
 * time one answers, the waiting calls that have a batch operation (commits, lease acquire and release, thread
 * creation, checkpoint loads) go to the server together in one statement (`run_batch`): one round trip and one
 * transaction (one WAL flush) for up to `maxCalls` calls. Each call runs in a subtransaction of its own, so a
 * rejected call (a conflict, a stale lease) rolls back alone and its caller gets the same error as unbatched.
 * A call's writes are durable when its promise resolves, as before. Calls run in thread-id order in a batch,
 * the order in which every store function takes its locks, so two batches never deadlock.
 */
export class CallBatcher {
  #inFlight = 0;
  readonly #waiting: Waiting[] = [];

  constructor(
    private readonly single: Executor,
    private readonly batch: Statement,
    private readonly mode: CallBatching,
    private readonly connections: number,
    private readonly maxCalls = 32,
  ) {}

  readonly execute: Executor = (statement, values) => {
    if (this.mode === 'off') return this.single(statement, values);
    if (this.mode === 'always' && statement.batchOperation !== undefined) {
      return this.#run([{ statement, values, resolve: () => {}, reject: () => {} }], true);
    }
    if (this.#inFlight < this.connections) return this.#run1(statement, values);
    return new Promise<string[]>((resolve, reject) => {
      this.#waiting.push({ statement, values, resolve, reject });
    });
  };

  async #run1(statement: Statement, values: unknown[]): Promise<string[]> {
    this.#inFlight++;
    try {
      return await this.single(statement, values);
    } finally {
      this.#inFlight--;
      this.#drain();
    }
  }

  /** Sends what waits, while connections are free: batchable calls together, the others one by one. */
  #drain(): void {
    while (this.#waiting.length > 0 && this.#inFlight < this.connections) {
      const first = this.#waiting[0]!;
      if (first.statement.batchOperation === undefined) {
        this.#waiting.shift();
        this.#run1(first.statement, first.values).then(first.resolve, first.reject);
        continue;
      }
      const calls: Waiting[] = [];
      for (let index = 0; index < this.#waiting.length && calls.length < this.maxCalls; ) {
        const call = this.#waiting[index]!;
        if (call.statement.batchOperation === undefined) {
          index++;
        } else {
          calls.push(call);
          this.#waiting.splice(index, 1);
        }
      }
      if (calls.length === 1) {
        this.#run1(first.statement, first.values).then(first.resolve, first.reject);
      } else {
        void this.#run(calls, false);
      }
    }
  }

  /** One round trip for `calls`; with `alone`, answers the only call's rows (its error thrown) instead. */
  async #run(calls: Waiting[], alone: boolean): Promise<string[]> {
    // Stable: one thread's calls keep their order.
    const ordered = calls
      .map((call, index) => ({ call, index }))
      .sort((a, b) => {
        const left = String(a.call.values[0]);
        const right = String(b.call.values[0]);
        return left < right ? -1 : left > right ? 1 : a.index - b.index;
      })
      .map(({ call }) => call);
    const payload = JSON.stringify(
      ordered.map((call) => ({ op: call.statement.batchOperation, a: call.values })),
    );
    this.#inFlight++;
    let answers: BatchAnswer[];
    try {
      const [text] = await this.single(this.batch, [payload]);
      answers = JSON.parse(text ?? '[]') as BatchAnswer[];
    } catch (error) {
      if (alone) throw error;
      for (const call of ordered) call.reject(error);
      return [];
    } finally {
      this.#inFlight--;
      this.#drain();
    }
    if (answers.length !== ordered.length) {
      const error = new Error(`run_batch answered ${answers.length} results for ${ordered.length} calls`);
      if (alone) throw error;
      for (const call of ordered) call.reject(error);
      return [];
    }
    for (const [index, call] of ordered.entries()) {
      const answer = answers[index]!;
      if ('e' in answer) {
        const error = serverError(answer);
        if (alone) throw error;
        call.reject(error);
      } else {
        const rows = answer.r === null ? [] : [answer.r];
        if (alone) return rows;
        call.resolve(rows);
      }
    }
    return [];
  }
}

/** The error a batched call raised, shaped like pg's (`code`, `detail`, `severity`) for the store's mapping. */
function serverError(answer: { e: string; m: string; d: string | null }): Error {
  return Object.assign(new Error(answer.m), {
    code: answer.e,
    severity: 'ERROR',
    ...(answer.d === null ? {} : { detail: answer.d }),
  });
}
