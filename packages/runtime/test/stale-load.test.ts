import { LunationError, type LunationStore } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

// A process that read the thread under its lease, then stalled past it (SIGSTOP, a starved CPU), must not go on
// from that read: another process may have taken the thread, used the same decision and moved on meanwhile.
// Seen in the 2,000-run fleet test on PostgreSQL: a stalled worker resumed a run with a decision another worker had
// applied already (its first commit failed on the message count, and nothing ran twice only for that).

const log: string[] = [];
const send = defineTool({
  name: 'gated_send',
  description: 'Sends',
  input: z.object({ n: z.number() }),
  execute: ({ n }) => {
    log.push(`sent ${n}`);
    return 'sent';
  },
});

/** Asks for `gated_send` twice, one step after the other; then answers. */
const model = new ScriptedModel((request) => {
  const answered = request.messages.filter((message) => message.role === 'tool').length;
  return answered < 2 ? callTool('gated_send', { n: answered + 1 }) : reply('done');
});

function runtimeOn(store: LunationStore, owner: string, leaseTtlMs: number) {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [send],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'gated_*', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ owner, leaseTtlMs })
    .build();
}

describe('a process stalled between reading a thread and running it', () => {
  it('does not resume a run from what it read before its lease lapsed: the decision is not applied twice', async () => {
    log.length = 0;
    const store = new MemoryStore();
    const first = await (
      await runtimeOn(store, 'setup', 5_000).run({ threadId: 't', input: 'go', stream: false })
    ).result;
    const decision = {
      decisionId: 'd1',
      ticketId: first.openTickets[0]?.id ?? '',
      action: 'resume' as const,
    };

    // The stalled process: once it has read the thread, it stops (its renewals never reach the store either).
    let stalled = false;
    let resume: () => void = () => {};
    const resumed = new Promise<void>((resolve) => {
      resume = resolve;
    });
    const stalling = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        if (property === 'loadCheckpoint') {
          return async (threadId: string) => {
            const checkpoint = await target.loadCheckpoint(threadId);
            stalled = true;
            await resumed;
            return checkpoint;
          };
        }
        if (property === 'renewLease') {
          return (...args: unknown[]) =>
            stalled ? new Promise(() => {}) : value.apply(target, args as never);
        }
        return value.bind(target);
      },
    });
    const slow = runtimeOn(stalling, 'slow', 300).sendDecisions('t', [decision]);
    for (let tries = 0; tries < 200 && !stalled; tries++) await new Promise((r) => setTimeout(r, 5));
    expect(stalled).toBe(true);

    // Meanwhile another process takes the thread once the stalled one's lease lapsed, applies the same decision,
    // runs the call, and waits on the next one.
    const other = runtimeOn(store, 'other', 5_000);
    let outcome: Awaited<ReturnType<typeof other.sendDecisions>> | undefined;
    for (let tries = 0; tries < 400 && outcome === undefined; tries++) {
      outcome = await other.sendDecisions('t', [decision]).catch((error: unknown) => {
        if (LunationError.hasCode(error, 'thread-busy')) return undefined;
        throw error;
      });
      if (outcome === undefined) await new Promise((r) => setTimeout(r, 25));
    }
    expect((await outcome?.run?.result)?.status).toBe('waiting');
    expect(log).toEqual(['sent 1']);
    const before = await store.getLatestRun('t');

    // The stalled process goes on (SIGCONT: its calls reach the store again): it must not resume the run from its
    // old read.
    stalled = false;
    resume();
    const late: unknown = await slow.catch((error: unknown) => error);
    if (late instanceof Error) {
      expect(LunationError.hasCode(late, 'lease-lost')).toBe(true);
    } else {
      expect(late).toMatchObject({ applied: [] });
      expect((late as { run?: unknown }).run).toBeUndefined();
    }
    expect(log).toEqual(['sent 1']);
    expect(await store.getLatestRun('t')).toEqual(before);
    const events = (await store.listMessages('t')).length;
    expect(events).toBe(4);
  }, 30_000);
});
