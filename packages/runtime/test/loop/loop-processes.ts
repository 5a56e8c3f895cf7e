import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type CheckpointCommit,
  type Lease,
  LunationError,
  type LunationStore,
  type ToolExecution,
  type ToolResultPart,
} from '@lunation/contract';
import { afterAll, afterEach } from 'vitest';
import { MemoryStore } from '../../../store-memory/src/index.js';
import { SqliteStore } from '../../../store-sqlite/src/index.js';
import type { AgentRuntime } from '../../src/index.js';

/** A store the loop tests run on: MemoryStore, and SqliteStore on a real file (closed after each test). */
export interface LoopBackend {
  name: string;
  open(): Promise<LunationStore>;
}

/** The stores of the loop tests, in a temporary folder named after `prefix` that goes when the file's tests end. */
export function loopBackends(prefix: string): LoopBackend[] {
  const directory = mkdtempSync(join(tmpdir(), `${prefix}-`));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const open: LunationStore[] = [];
  afterEach(async () => {
    for (const store of open.splice(0)) await store.close();
  });
  let counter = 0;
  return [
    { name: 'memory', open: async () => new MemoryStore() },
    {
      name: 'sqlite file',
      open: async () => {
        const store = await SqliteStore.open({ path: join(directory, `db-${++counter}.sqlite`) });
        open.push(store);
        return store;
      },
    },
  ];
}

/**
 * A process's view of the store: its calls are recorded (commits as copies); after `crash()` nothing reaches the
 * store again and every call hangs, as for a process that died. Its thread leases lapse at once when it dies (as
 * they would once their time to live passed), so a test's leases can be long — a live process never loses its
 * lease to a starved machine — while a dead one's successor need not wait them out.
 */
export function processOn(store: LunationStore) {
  let dead = false;
  const calls: Array<{ method: string; argument: unknown }> = [];
  const commits: CheckpointCommit[] = [];
  const leases = new Map<string, number>();
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'close') return value;
      return (...args: unknown[]) => {
        if (dead) return new Promise<never>(() => {});
        calls.push({ method: String(property), argument: args[0] });
        if (property === 'commit') commits.push(structuredClone(args[0] as CheckpointCommit));
        const result = (value as (...callArgs: unknown[]) => unknown).apply(target, args);
        if (property === 'acquireLease' || property === 'renewLease') {
          void (result as Promise<Lease>).then(
            (lease) => leases.set(lease.threadId, lease.token),
            () => {},
          );
        } else if (property === 'releaseLease') {
          leases.delete((args[0] as { threadId: string }).threadId);
        }
        return result;
      };
    },
  });
  return {
    store: proxy as LunationStore,
    calls,
    commits,
    crash: () => {
      dead = true;
      for (const [threadId, token] of leases) void store.releaseLease({ threadId, token }).catch(() => {});
    },
    /** The ledger starts this process asked for. */
    begun: () =>
      calls
        .filter((call) => call.method === 'beginToolExecution')
        .map((call) => (call.argument as { toolName: string }).toolName),
    /** The ledger reads this process made (`getToolExecution`: the run ids asked for). */
    looked: () =>
      calls.filter((call) => call.method === 'getToolExecution').map((call) => String(call.argument)),
    /** The tool names of the in-flight ledger entries this process's commits claimed. */
    claimed: () =>
      commits
        .flatMap((commit) => (commit.toolExecutions ?? []) as ToolExecution[])
        .filter((entry) => entry.status === 'in-flight')
        .map((entry) => entry.toolName),
  };
}

/** Continues the thread `t` from a fresh process, retrying while the dead process's lease lasts. */
export async function recover(runtime: AgentRuntime, input?: string) {
  const deadline = Date.now() + 5_000;
  for (;;) {
    try {
      return await (
        await runtime.run({ threadId: 't', stream: false, ...(input === undefined ? {} : { input }) })
      ).result;
    } catch (error) {
      if (!LunationError.hasCode(error, 'thread-busy') || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

/** Waits (up to 5 s) until a process reaches the state `condition` looks for. */
export async function until(condition: () => boolean) {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for the process to reach its state');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** The tool results of thread `t`'s tool messages, in order. */
export async function toolResults(store: LunationStore) {
  return (await store.listMessages('t'))
    .filter((record) => record.message.role === 'tool')
    .flatMap((record) => record.message.content as ToolResultPart[]);
}
