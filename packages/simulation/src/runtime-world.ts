import type { UserMessage } from '@lunation/contract';
import { AgentWorker } from '@lunation/fleet';
import { createRuntime, defineTool } from '@lunation/runtime';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { z } from 'zod';
import type { FaultCounts } from './faults.js';
import type { WorldReport } from './inbox-world.js';
import { logViolations } from './log-invariants.js';
import { Scheduler, type SimulatedProcess } from './scheduler.js';
import { type DispatchFaults, SimulatedDispatcher } from './simulated-dispatcher.js';
import { SimulatedStore, type StoreFaults } from './simulated-store.js';
import { WorldLedger } from './world-ledger.js';

/** Options of {@link runRuntimeWorld}. */
export interface RuntimeWorldOptions {
  /** The seed of the whole world. */
  seed: number;
  /** Worker processes running at once. @default 2 */
  workers?: number;
  /** Threads the runs go to. @default 2 */
  threads?: number;
  /** Runs submitted to each thread, one after another. @default 2 */
  runsPerThread?: number;
  /** Chance that, after a step, one live worker crashes (a new incarnation replaces it). @default 0 */
  crashRate?: number;
  /** Faults of the store. @default none */
  storeFaults?: StoreFaults;
  /** Faults of the dispatcher. @default none */
  dispatchFaults?: DispatchFaults;
  /** Keep the whole trace (to print it). @default false */
  keepTrace?: boolean;
  /** Give up after this many virtual ms. @default 600000 */
  maxVirtualMs?: number;
  /** Give up after this many real ms (a watchdog: the runtime's own timers are real). @default 30000 */
  maxRealWaitMs?: number;
}

const leaseTtlMs = 30_000;
const claimLockMs = 30_000;

/**
 * A world of today's runtime over the simulated store and dispatcher: `AgentWorker`s in simulated processes run
 * scripted models (each model call an operation the scheduler completes) and a tool whose real effect (each
 * attempt an operation too) the world ledger counts; a client submits runs; workers crash at any step and come
 * back as new incarnations. After every step the invariants are checked from the store, the dispatcher's event
 * logs and the ledger. The runtime's own timers (lease renewal, claim keep-alive, retry sleeps) are still real
 * until the Clock seam is wired: the claim lock and the thread lease are long in virtual time, so they do not
 * lapse while a worker is alive.
 */
export async function runRuntimeWorld(options: RuntimeWorldOptions): Promise<WorldReport> {
  const scheduler = new Scheduler({ seed: options.seed, trace: { keepAll: options.keepTrace ?? false } });
  const random = scheduler.stream('world');
  const chaos = scheduler.stream('chaos');
  const store = new SimulatedStore({
    scheduler,
    ...(options.storeFaults ? { faults: options.storeFaults } : {}),
  });
  const dispatcher = new SimulatedDispatcher({
    scheduler,
    ...(options.dispatchFaults ? { faults: options.dispatchFaults } : {}),
  });
  const ledger = new WorldLedger();
  const violations: string[] = [];
  const threadIds = Array.from({ length: options.threads ?? 2 }, (_, index) => `thread-${index + 1}`);
  const runsPerThread = options.runsPerThread ?? 2;
  const runIds: string[] = [];
  const live = new Map<number, { process: SimulatedProcess; worker: AgentWorker }>();
  const finished = new Set<string>();
  const ended = new Map<string, number>();
  const findings = new Set<string>();
  let crashes = 0;
  let generation = 0;

  const startWorker = (slot: number): void => {
    generation++;
    const process = scheduler.process(`w${slot}.${generation}`);
    const charge = defineTool({
      name: 'charge',
      description: 'Charges an amount: a real effect, counted by the world',
      input: z.object({ amount: z.number() }),
      execute: async ({ amount }, context) => {
        await scheduler.operation(process, `tool.charge ${context.identity.runId} ${amount}`, () => {
          const recorded = [...(store.backend.ledger.get(context.identity.runId)?.values() ?? [])].find(
            (slot) => slot.entry.idempotencyKey === context.idempotencyKey,
          );
          if (recorded?.entry.status === 'completed') {
            violations.push(
              `${process.name} charged ${context.idempotencyKey} after its result was recorded`,
            );
          }
          if (ledger.count(context.idempotencyKey) > 0 && !context.rerun) {
            violations.push(`${process.name} charged ${context.idempotencyKey} again without rerun`);
          }
          ledger.record({
            key: context.idempotencyKey,
            process: process.name,
            label: `charge ${amount}`,
            at: scheduler.elapsed(),
          });
        });
        return { charged: amount };
      },
    });
    const model = new ScriptedModel((request) => {
      const first = request.messages.filter((message) => message.role === 'user').at(-1);
      const text = first?.content[0]?.type === 'text' ? first.content[0].text : '';
      const lastIsTool = request.messages.at(-1)?.role === 'tool';
      const response: ScriptedResponse = lastIsTool
        ? { text: `charged for ${text}` }
        : { text: 'charging', toolCalls: [{ toolName: 'charge', arguments: { amount: text.length } }] };
      return scheduler.operation(process, `model ${text}`, () => response);
    });
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [charge] })
      .store(store.forProcess(process))
      .options({ leaseTtlMs, owner: `w${slot}` })
      .build();
    const worker = new AgentWorker({
      runtime,
      dispatcher: dispatcher.forProcess(process),
      workerId: process.name,
      concurrency: 1,
      claimLockMs,
      idleWaitMs: 1_000,
      strandedScanIntervalMs: 0,
    });
    live.set(slot, { process, worker });
    worker.start();
  };

  const client = scheduler.process('client');
  const clientDispatcher = dispatcher.forProcess(client);
  const submit = async (): Promise<void> => {
    for (let round = 1; round <= runsPerThread; round++) {
      for (const threadId of threadIds) {
        const runId = `${threadId}-run-${round}`;
        const message: UserMessage = {
          id: `${runId}-input`,
          role: 'user',
          content: [{ type: 'text', text: `pay ${'x'.repeat(random.int(1, 9))}` }],
        };
        runIds.push(runId);
        for (;;) {
          try {
            await clientDispatcher.submit({
              id: `${runId}-submission`,
              threadId,
              request: { type: 'input', input: [message], runId, agentId: 'a' },
            });
            break;
          } catch {
            await client.clock.sleep(100);
          }
        }
        await client.clock.sleep(random.int(0, 500));
      }
    }
  };

  const done = (): boolean =>
    runIds.length === threadIds.length * runsPerThread &&
    runIds.every((runId) => store.backend.runs.get(runId)?.record.status === 'done');

  const check = (): void => {
    for (const slot of store.backend.threads.values()) {
      const seen = new Set<string>();
      slot.messages.forEach((record, index) => {
        if (record.seq !== index + 1)
          violations.push(`thread ${slot.id}: message ${index + 1} has seq ${record.seq}`);
        if (seen.has(record.message.id))
          violations.push(`thread ${slot.id}: message ${record.message.id} twice`);
        seen.add(record.message.id);
      });
    }
    for (const runId of runIds) {
      const status = store.backend.runs.get(runId)?.record.status;
      if (status === 'done') finished.add(runId);
      else if (finished.has(runId)) violations.push(`run ${runId} was done, now ${status}`);
      const page = dispatcher.backend.readEvents(runId, 0, 100_000);
      const endedWith = ended.get(runId);
      if (endedWith !== undefined && page.events.length > endedWith) {
        violations.push(`run ${runId}: ${page.events.length - endedWith} events appended after its end mark`);
      }
      if (page.ended) ended.set(runId, page.events.length);
      else if (endedWith !== undefined && page.events.length < endedWith) ended.delete(runId);
      violations.push(
        ...logViolations(
          runId,
          page.events.map(({ event }) => event),
          store.backend.runs.get(runId)?.record,
        ),
      );
    }
  };

  const crashSomeone = (): void => {
    if (live.size === 0 || !chaos.chance(options.crashRate ?? 0)) return;
    const slot = chaos.pick([...live.keys()].sort());
    const victim = live.get(slot);
    if (victim === undefined) return;
    crashes++;
    victim.process.crash();
    live.delete(slot);
    startWorker(slot);
  };

  for (let slot = 1; slot <= (options.workers ?? 2); slot++) startWorker(slot);
  void submit();

  const maxTime = scheduler.now() + (options.maxVirtualMs ?? 600_000);
  const realDeadline = performance.now() + (options.maxRealWaitMs ?? 30_000);
  for (;;) {
    const outcome = await scheduler.run({
      until: () => violations.length > 0 || done() || performance.now() > realDeadline,
      maxTime,
      afterStep: () => {
        check();
        crashSomeone();
      },
    });
    if (outcome.reason !== 'quiet' || performance.now() > realDeadline) break;
    // Quiet in virtual time while the runtime waits on one of its own real timers: let real time pass.
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (violations.length === 0 && !done()) {
    const open = runIds.filter((runId) => store.backend.runs.get(runId)?.record.status !== 'done');
    violations.push(
      `liveness: after ${scheduler.elapsed()} virtual ms, runs not done: ${open.map((runId) => `${runId} (${store.backend.runs.get(runId)?.record.status ?? 'never started'})`).join(', ')}`,
    );
  }
  await Promise.all([...live.values()].map(({ worker }) => stopWorker(scheduler, worker)));
  for (const { process } of live.values()) process.crash();
  return {
    seed: options.seed,
    steps: scheduler.steps,
    virtualMs: scheduler.elapsed(),
    traceHash: scheduler.trace.hash(),
    trace: scheduler.trace.lines(),
    violations: [...new Set(violations)],
    findings: [...findings],
    faults: {
      ...prefixed('store.', store.faultCounts),
      ...prefixed('dispatch.', dispatcher.faultCounts),
      ...(crashes > 0 ? { crash: crashes } : {}),
    },
    effects: ledger.size,
    crashes,
  };
}

/** Stops a worker, running the scheduler meanwhile (its claim loop ends on a scheduled operation). */
async function stopWorker(scheduler: Scheduler, worker: AgentWorker): Promise<void> {
  let stopped = false;
  const stopping = worker.stop({ deadlineMs: 1_000 }).finally(() => {
    stopped = true;
  });
  while (!stopped) {
    await scheduler.run({ until: () => stopped, maxSteps: 1_000 });
    if (!stopped) await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await stopping;
}

function prefixed(prefix: string, counts: FaultCounts): FaultCounts {
  return Object.fromEntries(Object.entries(counts).map(([kind, count]) => [prefix + kind, count]));
}
