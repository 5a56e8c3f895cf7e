import { type InterruptPolicy, LunationError, type ToolExecution } from '@lunation/contract';
import { type AnyTool, defineTool, type Tool, type ToolContext } from '@lunation/runtime';
import { z } from 'zod';
import type { SimulatedProcess } from './scheduler.js';
import type { SimulatedTransaction } from './simulated-database.js';
import type { WorldContext } from './world-context.js';
import { type ToolFault, toolFailure, toolTimeoutMs } from './world-faults.js';

/**
 * The tools of the runtime world, one of each kind the runtime treats differently: `charge` (re-run after a
 * crash, the default), `refund` (gated: the permission plugin asks a person first), `notify` (interrupt policy
 * `fail`: at most once), `invoice` (interrupt policy `ask`: a person decides), `book` (a transactional effect:
 * a row in the store's own database, committed with the call's completion).
 */
export const worldToolNames = ['charge', 'refund', 'notify', 'invoice', 'book'] as const;
export type WorldToolName = (typeof worldToolNames)[number];

/** The permission rules of the world's agent: `refund` waits for an approval. */
export const worldPermissionRules = [{ tool: 'refund', decision: 'ask' as const }];

/** Every tool's input, one schema for all (its JSON Schema is derived once). */
const amountInput = z.object({ amount: z.number() });

const policies: Record<WorldToolName, InterruptPolicy> = {
  charge: 'rerun',
  refund: 'rerun',
  notify: 'fail',
  invoice: 'ask',
  book: 'rerun',
};

/** A tool's definition with no effect yet: made once, shared by every worker, which adds its own `execute`. */
function shape(name: WorldToolName, description: string): Tool<{ amount: number }> {
  return defineTool({
    name,
    description,
    input: amountInput,
    ...(name === 'book' ? {} : { interruptPolicy: policies[name], timeoutMs: toolTimeoutMs }),
    execute: () => {
      throw new Error(`The world's ${name} tool runs only as a worker's (worldTools)`);
    },
  });
}

/** The tools' descriptors and schemas, shared (deriving a tool's JSON Schema copy per worker cost a lot). */
const shapes = {
  charge: shape('charge', 'charge: a real effect the world counts'),
  refund: shape('refund', 'refund: a real effect the world counts'),
  notify: shape('notify', 'notify: a real effect the world counts'),
  invoice: shape('invoice', 'invoice: a real effect the world counts'),
  book: shape('book', 'Books a slot: a row written in the store’s own database with the call’s completion'),
};

/**
 * The world's tools for one worker process (whose leases carry `owner`): each real effect is an operation of that
 * process.
 */
export function worldTools(world: WorldContext, process: SimulatedProcess, owner: string): AnyTool[] {
  const latency = world.scheduler.stream('tool-latency');
  const delayMs = world.toolDelayMs ?? 0;
  const effect = (name: WorldToolName, context: ToolContext) =>
    world.scheduler.operation(
      process,
      `tool.${name} ${context.identity.runId}`,
      () => recordEffect(world, process, name, context),
      delayMs > 0 ? { delayMs: latency.int(0, delayMs) } : {},
    );
  const simple = (name: Exclude<WorldToolName, 'book'>): Tool<{ amount: number }> => ({
    ...shapes[name],
    execute: async ({ amount }, context) => {
      checkRunner(world, process, owner, context);
      const fault = world.workerFaults.tool();
      await misbehaveBefore(fault, name, context);
      await effect(name, context);
      if (fault === 'ignore-signal')
        await process.clock.sleep(2 * toolTimeoutMs + latency.int(0, toolTimeoutMs));
      return { [name]: amount };
    },
  });
  const book: Tool<{ amount: number }> = {
    ...shapes.book,
    execute: async ({ amount }, context) => {
      checkRunner(world, process, owner, context);
      return context.transaction(async (transaction) => {
        checkEffect(world, process, 'book', context);
        (transaction as SimulatedTransaction).insert(context.idempotencyKey);
        return { booked: amount };
      });
    },
  };
  return [simple('charge'), simple('refund'), simple('notify'), simple('invoice'), book];
}

/**
 * A faulty tool attempt before its effect: `throw` fails it; `hang` waits until its signal aborts (its timeout, or
 * the run's cancel) and fails with the signal's reason. The effect then never happens.
 */
function misbehaveBefore(fault: ToolFault, name: string, context: ToolContext): Promise<void> {
  if (fault === 'throw') return Promise.reject(toolFailure(name));
  if (fault !== 'hang') return Promise.resolve();
  const { signal } = context;
  return new Promise<void>((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

/**
 * One runner per thread: a tool starts only while its process's owner holds the thread's lease (no other owner
 * has taken it since). Checked as the tool starts, not as its effect lands: a tool that ignores its signal may
 * land after a takeover, the protocol's accepted race.
 */
function checkRunner(
  world: WorldContext,
  process: SimulatedProcess,
  owner: string,
  context: ToolContext,
): void {
  const { threadId } = context.identity;
  const lease = world.store.backend.leases.get(threadId)?.lease;
  if (lease?.owner !== owner || lease.token !== context.fencingToken) {
    world.violations.push(
      `${process.name}: ${context.toolName} ${context.idempotencyKey} started on thread ${threadId} while ${lease === undefined ? 'no one' : lease.owner} held its lease`,
    );
  }
}

/**
 * An effect reaching its target: refused when it carries a lower fencing token than the target saw for the thread
 * (see `WorldLedger.admit`); otherwise checked against the store and the user's journal, then counted.
 */
function recordEffect(
  world: WorldContext,
  process: SimulatedProcess,
  name: WorldToolName,
  context: ToolContext,
): void {
  const effect = {
    key: context.idempotencyKey,
    process: process.name,
    label: `${name} ${context.identity.runId}${context.rerun ? ' (rerun)' : ''}`,
    at: world.scheduler.elapsed(),
  };
  // The tool passes its fencing token to the target, as the runtime's README tells tools with external effects.
  if (!world.ledger.admit(context.identity.threadId, context.fencingToken, effect)) {
    throw new LunationError(
      'stale-lease',
      `${name}: the target refused fencing token ${context.fencingToken} (it has seen a later one for thread ${context.identity.threadId})`,
    );
  }
  checkEffect(world, process, name, context);
  world.ledger.record(effect);
}

/**
 * The invariants of one effect, checked as it happens: never after its result was recorded; again only when
 * re-run (`rerun`); a `fail` call at most once; an `ask` call again only after a person chose `rerun`; a gated
 * call only with the user's approving decision for its ticket, sent before its run was cancelled, superseded or
 * deleted; nothing of a deleted thread's runs after the delete.
 */
function checkEffect(
  world: WorldContext,
  process: SimulatedProcess,
  name: WorldToolName,
  context: ToolContext,
): void {
  const { journal, ledger, store, violations } = world;
  const { runId } = context.identity;
  const key = context.idempotencyKey;
  const who = `${process.name}: ${name} ${key}`;
  const recorded = [...(store.backend.ledger.get(runId)?.values() ?? [])].find(
    (slot) => slot.entry.idempotencyKey === key,
  );
  const before = ledger.count(key);
  if (
    recorded?.entry.status === 'completed' &&
    !lateInterruptedEffect(world, context, recorded.entry, before)
  )
    violations.push(`${who} ran after its result was recorded`);
  if (before > 0 && !context.rerun) violations.push(`${who} ran again without rerun`);
  if (name === 'notify' && before > 0) violations.push(`${who} (interrupt policy fail) ran twice`);
  if (name === 'invoice' && before > 0) {
    const reruns = [...journal.intents.values()].filter(
      (intent) =>
        intent.choice === 'rerun' &&
        intent.action === 'resume' &&
        (intent.ticket.parameters as { idempotencyKey?: string } | undefined)?.idempotencyKey === key,
    ).length;
    if (before > reruns)
      violations.push(`${who} (interrupt policy ask) ran ${before + 1} times after ${reruns} rerun choices`);
  }
  if (name === 'refund') {
    const intent = journal.intentFor(runId, [context.toolCallId, context.callId]);
    const closedAt = journal.closedAt(runId);
    if (intent === undefined) violations.push(`${who} (gated) ran without a decision for its ticket`);
    else if (intent.action !== 'resume') violations.push(`${who} (gated) ran after it was denied`);
    else if (closedAt !== undefined && intent.firstSentAt > closedAt)
      violations.push(`${who} (gated) ran on an approval sent after its run was cancelled or superseded`);
  }
  if (journal.deleted(runId, world.scheduler.elapsed()))
    violations.push(`${who} ran after its thread was deleted`);
}

/**
 * The late effect of the execution a successor recorded as interrupted: its record says the call "may or may not
 * have taken effect" and that it will not run again, so this one landing (from an earlier lease holder, the first
 * for its key) is the outcome the record left open, not a second execution. Seed 2286 of `stalls`: a `notify`
 * (policy `fail`) whose worker stalled after sending it; seeds 8751 and 9816 (aimed stalls off): one that stalled
 * between its lease check and the tool's start (the window only a fenced target closes, and a `fail` call's
 * successor never calls the target). A re-execution still counts: it carries the latest token, or it is the key's
 * second effect.
 */
function lateInterruptedEffect(
  world: WorldContext,
  context: ToolContext,
  entry: ToolExecution,
  before: number,
): boolean {
  if (before > 0 || context.rerun || entry.result?.metadata?.interrupted !== true) return false;
  // The highest token the store issued for the thread (kept after a release): a later holder's.
  const highest = world.store.backend.leases.get(context.identity.threadId)?.highestToken ?? 0;
  return context.fencingToken !== undefined && context.fencingToken < highest;
}

/** The model's plan for a run: the tools named in its input (`<run id>: charge refund …`). */
export function planOf(text: string): WorldToolName[] {
  const [, list = ''] = text.split(': ');
  return list
    .split(' ')
    .filter((name): name is WorldToolName => (worldToolNames as readonly string[]).includes(name));
}
