import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AgentEvent, Dispatcher, RunEventRecord } from '@lunation/contract';
import { AgentWorker, FleetClient } from '@lunation/fleet';
import { MemoryStore } from '@lunation/store-memory';
import { afterEach, describe, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import { uniqueId } from '../fixtures.js';
import { fleetRuntime } from '../fleet/fleet-agent.js';
import { serveStore } from '../fleet/remote-store.js';
import type { WorkerProcessMessage, WorkerProcessStart } from '../fleet/worker-process.js';

/** How the fleet specs start a worker process on the dispatcher under test; see `DispatcherConformanceOptions`. */
export interface WorkerProcessOptions {
  /** A module exporting `openDispatcher(backend, policy)`: a dispatcher on the backend `backend` names. */
  module: string | URL;
  /** What names the backend of a dispatcher `create` made, sent to the worker process (structured-cloneable). */
  backend(dispatcher: Dispatcher): unknown;
  /** Node options of the worker process. @default `--import tsx` when `module` is TypeScript */
  execArgv?: string[];
}

/** A claim lapses this soon after its worker died (the workers extend theirs every third of it). */
const claimLockMs = 1_500;
const kitFromSource = import.meta.url.endsWith('.ts');
const workerEntry = new URL(`../fleet/worker-process.${kitFromSource ? 'ts' : 'js'}`, import.meta.url);

const types = (records: RunEventRecord[]) => records.map((record) => record.event.type);
const runEnd = (records: RunEventRecord[]) =>
  records.at(-1)?.event as Extract<AgentEvent, { type: 'run-end' }> | undefined;

/** Follows a run's events through a client until its `run-end`, failing after `timeoutMs`. */
async function follow(
  client: FleetClient,
  runId: string,
  timeoutMs: number,
  after?: string,
): Promise<RunEventRecord[]> {
  const records: RunEventRecord[] = [];
  const signal = AbortSignal.timeout(timeoutMs);
  for await (const record of client.events(runId, { signal, ...(after === undefined ? {} : { after }) })) {
    records.push(record);
  }
  if (records.at(-1)?.event.type !== 'run-end') {
    throw new Error(
      `Run ${runId}: no run-end within ${timeoutMs} ms through the dispatcher (got ${types(records).join(', ') || 'no events'})`,
    );
  }
  return records;
}

/** Every event once: no id twice. */
function expectDistinctIds(records: RunEventRecord[]): void {
  const ids = records.map((record) => record.id);
  expect(new Set(ids).size).toBe(ids.length);
}

/** Starts a worker process on the dispatcher under test; resolves once its worker runs. */
function startWorkerProcess(
  options: WorkerProcessOptions,
  dispatcher: Dispatcher,
  store: MemoryStore,
  onMessage: (message: WorkerProcessMessage) => void,
): Promise<ChildProcess> {
  const module = options.module instanceof URL ? options.module.href : pathToFileURL(options.module).href;
  const typescript = /\.[cm]?ts$/.test(module);
  const execArgv = [
    ...(kitFromSource ? ['--conditions=@lunation/source', '--import', 'tsx'] : []),
    ...(options.execArgv ?? (typescript && !kitFromSource ? ['--import', 'tsx'] : [])),
  ];
  const child = spawn(process.execPath, [...execArgv, fileURLToPath(workerEntry)], {
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  serveStore(store, child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`The worker process did not start within 60000 ms. Its stderr:\n${stderr}`));
    }, 60_000);
    child.on('message', (message: WorkerProcessMessage) => {
      if (message.kind === 'ready') {
        clearTimeout(timer);
        resolve(child);
      } else if (message.kind === 'failed') {
        clearTimeout(timer);
        reject(new Error(`The worker process could not start: ${message.message}`));
      }
      onMessage(message);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(`The worker process exited (${signal ?? code}) before it started. Its stderr:\n${stderr}`),
      );
    });
    const start: WorkerProcessStart = {
      kind: 'start',
      module,
      backend: options.backend(dispatcher),
      policy: {},
      workerId: 'kit-worker-process',
      claimLockMs,
    };
    child.send(start);
  });
}

/**
 * The runtime's `AgentWorker` and `FleetClient` over the dispatcher under test: an approval flow across two
 * workers and two clients, and a worker process killed with SIGKILL mid-claim whose successor finishes the run.
 */
export function fleetSpec(
  context: DispatchSpecContext,
  workerProcess: WorkerProcessOptions | false | undefined,
): void {
  describe("the runtime's workers and clients over the dispatcher", () => {
    const workers: AgentWorker[] = [];
    const children: ChildProcess[] = [];

    afterEach(async () => {
      for (const child of children.splice(0)) child.kill('SIGKILL');
      await Promise.all(workers.splice(0).map((worker) => worker.stop({ deadlineMs: 5_000 })));
    });

    function startWorker(
      dispatcher: Dispatcher,
      store: MemoryStore,
      workerId: string,
      wait = async () => '',
    ) {
      const notes: string[] = [];
      const waits: string[] = [];
      const runtime = fleetRuntime(store, {
        onNote: (text, key) => notes.push(`${text} ${key}`),
        wait: async (key) => {
          waits.push(key);
          return wait();
        },
      });
      const worker = new AgentWorker({
        runtime,
        dispatcher,
        workerId,
        claimLockMs,
        idleWaitMs: 100,
        strandedScanIntervalMs: 0,
      }).start();
      workers.push(worker);
      return { notes, waits };
    }

    it('an approval flow: a run suspends on one worker and resumes on decisions a second client sends', {
      timeout: 60_000,
    }, async () => {
      const dispatcher = await context.open();
      const store = new MemoryStore();
      const first = startWorker(await context.openSibling(dispatcher), store, 'kit-worker-1');
      const second = startWorker(await context.openSibling(dispatcher), store, 'kit-worker-2');
      const client = new FleetClient({ dispatcher, store });
      const threadId = uniqueId('thread');

      const { runId } = await client.send({ threadId, input: 'note milk' });
      const suspended = await follow(client, runId, 30_000);
      expect(types(suspended)[0]).toBe('run-start');
      const waiting = runEnd(suspended);
      expect(waiting).toMatchObject({ status: 'waiting' });
      const ticket = waiting?.openTickets[0];
      expect(ticket?.toolName).toBe('note');
      expect([...first.notes, ...second.notes]).toEqual([]);

      // Another client (another front-end process) sends the decision; a worker resumes the same run.
      const other = new FleetClient({ dispatcher: await context.openSibling(dispatcher), store });
      const resumed = await other.decide(threadId, [
        { decisionId: uniqueId('decision'), ticketId: ticket?.id ?? '', action: 'resume' },
      ]);
      expect(resumed.runId).toBe(runId);
      // Followed from the last event id the first client saw: nothing skipped, nothing twice.
      const rest = await follow(other, runId, 30_000, suspended.at(-1)?.id);
      expect(runEnd(rest)).toMatchObject({ status: 'done' });
      expect(types(rest)).toEqual(
        expect.arrayContaining(['tool-call-resumed', 'tool-execution-start', 'tool-result']),
      );
      expectDistinctIds([...suspended, ...rest]);

      // The whole log, read back from the start, is the two parts in order.
      const whole = await dispatcher.readEvents(runId);
      expect(whole.events.map((record) => record.id)).toEqual(
        [...suspended, ...rest].map((record) => record.id),
      );

      expect([...first.notes, ...second.notes]).toEqual([
        expect.stringMatching(new RegExp(`^milk ${runId}:`)),
      ]);
      expect((await store.getRun(runId))?.status).toBe('done');
      expect((await store.listMessages(threadId)).map((record) => record.message.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
      ]);
      expect(await dispatcher.deadLetters()).toEqual([]);
      await expect.poll(async () => (await dispatcher.depth()).pending, { timeout: 10_000 }).toBe(0);
    });

    const killTitle =
      'a worker process killed with SIGKILL mid-claim: a successor takes the thread and finishes the run';
    if (workerProcess === false) {
      it.skip(`${killTitle} (skipped: the suite was given workerProcess: false, no backend another process reaches)`, () => {});
      return;
    }
    it(killTitle, { timeout: 120_000 }, async (testContext) => {
      if (workerProcess === undefined) {
        throw new Error(
          `Pass the workerProcess option (a module exporting openDispatcher(backend, policy), and backend(dispatcher)) so the kit can run a worker in another process, or workerProcess: false if no other process can reach the backend (${testContext.task.name})`,
        );
      }
      const dispatcher = await context.open();
      const store = new MemoryStore();
      const client = new FleetClient({ dispatcher, store });
      const threadId = uniqueId('thread');

      let started: (key: string) => void = () => {};
      const toolStarted = new Promise<string>((resolve) => {
        started = resolve;
      });
      const child = await startWorkerProcess(workerProcess, dispatcher, store, (message) => {
        if (message.kind === 'tool-started') started(message.idempotencyKey);
      });
      children.push(child);
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.once('exit', (_, signal) => resolve(signal)),
      );

      const { runId } = await client.send({ threadId, input: 'wait' });
      const key = await Promise.race([
        toolStarted,
        new Promise<never>((_, reject) =>
          setTimeout(
            () => reject(new Error('The worker process did not start the run within 30000 ms')),
            30_000,
          ),
        ),
      ]);
      expect(key).toMatch(new RegExp(`^${runId}:`));
      child.kill('SIGKILL');
      expect(await exited).toBe('SIGKILL');

      // The successor: another process's worker on the same backend, started once the first one is dead.
      const successor = startWorker(
        await context.openSibling(dispatcher),
        store,
        'kit-successor',
        async () => 'waited',
      );
      const records = await follow(client, runId, 60_000);
      expect(runEnd(records)).toMatchObject({ status: 'done' });
      expectDistinctIds(records);
      // The call the kill cut off ran again on the successor, under the same idempotency key, once.
      expect(successor.waits).toEqual([key]);
      const run = await store.getRun(runId);
      expect(run?.status).toBe('done');
      const ledger = await store.listToolExecutions(runId);
      expect(ledger).toEqual([
        expect.objectContaining({ idempotencyKey: key, status: 'completed', attempts: 2 }),
      ]);
      expect((await store.listMessages(threadId)).map((record) => record.message.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
      ]);
      expect(await dispatcher.deadLetters()).toEqual([]);
      await expect.poll(async () => (await dispatcher.depth()).pending, { timeout: 10_000 }).toBe(0);
    });
  });
}
