import type { Message, ToolResult, ToolResultPart } from '@lunation/contract';
import { type ToolCallRecord, toolCallsKey } from '@lunation/runtime';
import type { JournalEntry } from '../../fixtures/soak-journal.js';
import type { OutboxRow } from '../../fixtures/soak-outbox.js';
import {
  atMostOnceGates,
  findCall,
  type SoakCall,
  type SoakRun,
  soakTools,
} from '../../fixtures/soak-scenario.js';
import type { ThreadEvidence } from './thread-evidence.js';

/** The invariants of the durability protocol, numbered as there; 7 is the fleet sketch's "at most one holder". */
export const invariantNames = {
  1: 'no call executes without a gate outcome of allowed or an approving decision',
  2: 'no call whose result is recorded executes again',
  3: 'a call executes twice only if it was cut off mid-execution, both times with the same idempotency key',
  4: 'no acknowledged commit is lost; no commit is partial',
  5: 'every run ends done, or waiting on tickets that can be decided; run record and call states agree',
  6: 'every assistant tool call gets exactly one result, in call order',
  7: "at most one live process executes a thread's tools at any instant",
  8: 'a call whose interrupt policy is fail or ask never executes twice',
  9: "a transactional effect is in the store's database exactly once per finished call",
} as const;

export type Invariant = keyof typeof invariantNames;

export interface Violation {
  invariant: Invariant;
  run: SoakRun;
  detail: string;
}

/** What one run left behind: its journal lines (in order), the store's final state, and how the batch ended it. */
export interface RunEvidence {
  run: SoakRun;
  /** The batch journal's lines about this run's thread, plus every `killed` line. */
  journal: JournalEntry[];
  store: ThreadEvidence;
  /** Why the soak gave up on the run, if it did. */
  stranded: string | undefined;
  /** The outbox rows of the run's thread; undefined on stores without transactions. */
  outbox?: OutboxRow[];
}

type Entry<Type extends JournalEntry['type']> = Extract<JournalEntry, { type: Type }>;
type Located<Type extends JournalEntry['type']> = Entry<Type> & { at: number };

function located<Type extends JournalEntry['type']>(journal: JournalEntry[], type: Type): Located<Type>[] {
  const found: Located<Type>[] = [];
  journal.forEach((entry, at) => {
    if (entry.type === type) found.push({ ...(entry as Entry<Type>), at });
  });
  return found;
}

function writeKey(entry: { process: number; writeId: number }): string {
  return `${entry.process}:${entry.writeId}`;
}

/** How a violation names the process that wrote a journal line. */
function writer(entry: { process: number; pid: number }): string {
  return `process ${entry.process} [pid ${entry.pid}]`;
}

/** Commits whose messages are all in the store at the seqs they were written for. */
function landedCommits(evidence: RunEvidence): Set<string> {
  const bySeq = new Map(evidence.store.messages.map((record) => [record.seq, record.message.id]));
  const landed = new Set<string>();
  for (const write of located(evidence.journal, 'write-start')) {
    const messages = write.messages ?? [];
    if (write.method === 'commit' && messages.length > 0 && messages.every((m) => bySeq.get(m.seq) === m.id))
      landed.add(writeKey(write));
  }
  return landed;
}

/**
 * The provider's (the script's) id of each call by the runtime's own id, from the stored assistant messages:
 * the ledger keys calls by the runtime's id, the journal's tool lines and tool messages by the script's.
 */
function scriptIds(evidence: RunEvidence): Map<string, string> {
  const ids = new Map<string, string>();
  for (const { message } of evidence.store.messages) {
    if (message.role !== 'assistant') continue;
    for (const part of message.content)
      if (part.type === 'tool-call' && part.callId !== undefined) ids.set(part.callId, part.toolCallId);
  }
  return ids;
}

/** Writes that recorded a call's result: acknowledged, or found in the store although the writer died. */
function resultRecords(evidence: RunEvidence): Map<string, Array<{ at: number; what: string }>> {
  const acknowledged = new Set(located(evidence.journal, 'write-acked').map(writeKey));
  const landed = landedCommits(evidence);
  const ids = scriptIds(evidence);
  const records = new Map<string, Array<{ at: number; what: string }>>();
  const add = (callId: string, at: number, what: string) => {
    const toolCallId = ids.get(callId) ?? callId;
    records.set(toolCallId, [...(records.get(toolCallId) ?? []), { at, what }]);
  };
  for (const write of located(evidence.journal, 'write-start')) {
    const key = writeKey(write);
    if (!acknowledged.has(key) && !landed.has(key)) continue;
    const by = `${write.method} #${write.writeId} of ${writer(write)}`;
    for (const execution of write.executions ?? [])
      if (execution.status === 'completed')
        add(execution.toolCallId, write.at, `a completed ledger entry (${by})`);
    for (const message of write.messages ?? [])
      for (const toolCallId of message.answers ?? []) add(toolCallId, write.at, `a tool message (${by})`);
  }
  return records;
}

function checkGates(evidence: RunEvidence, violations: Violation[]): void {
  const { run, journal } = evidence;
  const decisions = located(journal, 'decision');
  for (const start of located(journal, 'execution-start')) {
    const found = findCall(run, start.toolCallId);
    const where = `"${start.toolCallId}" (${start.toolName}) ran in ${writer(start)}`;
    if (!found) {
      violations.push({ invariant: 1, run, detail: `${where}, a call the model never made` });
      continue;
    }
    if (found.call.gate === 'deny') {
      violations.push({ invariant: 1, run, detail: `${where} although the permission rule denies it` });
    } else if (found.call.gate === 'ask') {
      const earlier = decisions.filter((d) => d.toolCallId === start.toolCallId && d.at < start.at);
      if (earlier.some((decision) => decision.action === 'resume')) continue;
      const detail = earlier.some((decision) => decision.action === 'cancel')
        ? `${where} although the user denied it`
        : `${where} before any approving decision was sent (its ticket was never approved)`;
      violations.push({ invariant: 1, run, detail });
    }
  }
}

function checkReruns(evidence: RunEvidence, violations: Violation[]): void {
  const { run, journal } = evidence;
  const records = resultRecords(evidence);
  const starts = located(journal, 'execution-start');
  const byCall = new Map<string, typeof starts>();
  for (const start of starts) byCall.set(start.toolCallId, [...(byCall.get(start.toolCallId) ?? []), start]);
  for (const [toolCallId, attempts] of byCall) {
    const first = attempts[0] as (typeof attempts)[number];
    const gate = findCall(run, toolCallId)?.call.gate;
    if (gate !== undefined && atMostOnceGates.has(gate) && attempts.length > 1) {
      violations.push({
        invariant: 8,
        run,
        detail: `"${toolCallId}" (${first.toolName}) executed ${attempts.length} times, in ${attempts.map(writer).join(', ')}`,
      });
    }
    for (let index = 1; index < attempts.length; index++) {
      const attempt = attempts[index] as (typeof attempts)[number];
      const previous = attempts[index - 1] as (typeof attempts)[number];
      const name = `"${toolCallId}" ran again (attempt ${index + 1}, ${writer(attempt)})`;
      const recorded = records.get(toolCallId)?.find((record) => record.at < attempt.at);
      if (recorded) {
        violations.push({
          invariant: 2,
          run,
          detail: `${name} after its result was recorded in ${recorded.what}`,
        });
        continue;
      }
      if (previous.process === attempt.process) {
        violations.push({ invariant: 3, run, detail: `${name}: the same process had already run it` });
        continue;
      }
      const finish = journal.findIndex(
        (entry, at) =>
          at > previous.at &&
          at < attempt.at &&
          entry.type === 'execution-finish' &&
          entry.process === previous.process &&
          entry.toolCallId === toolCallId,
      );
      // After a finished call the run moves on only once the result is durable: a later model call, or (in a
      // sequential run) the next tool starting. Parallel calls may start while a sibling's result is written.
      const movedOn =
        finish < 0
          ? undefined
          : journal.find(
              (entry, at) =>
                at > finish &&
                at < attempt.at &&
                entry.process === previous.process &&
                (entry.type === 'model-call' ||
                  (run.agentId === 'sequential' &&
                    entry.type === 'tool-invoked' &&
                    entry.toolCallId !== toolCallId)),
            );
      if (movedOn) {
        const next =
          movedOn.type === 'model-call'
            ? `its model call for step ${movedOn.step}`
            : `"${(movedOn as Entry<'tool-invoked'>).toolCallId}"`;
        violations.push({
          invariant: 3,
          run,
          detail: `${name} although attempt ${index} (${writer(previous)}) had finished and the run went on to ${next} before the process died; only a call cut off mid-execution may run again`,
        });
      }
      if (attempt.idempotencyKey !== first.idempotencyKey) {
        violations.push({
          invariant: 3,
          run,
          detail: `${name} with idempotency key "${attempt.idempotencyKey}", not "${first.idempotencyKey}"`,
        });
      }
      if (!attempt.rerun)
        violations.push({ invariant: 3, run, detail: `${name} without rerun: true in its tool context` });
    }
  }
}

function checkCommits(evidence: RunEvidence, violations: Violation[]): void {
  const { run, journal, store } = evidence;
  const bySeq = new Map(store.messages.map((record) => [record.seq, record.message.id]));
  store.messages.forEach((record, index) => {
    if (record.seq !== index + 1)
      violations.push({ invariant: 4, run, detail: `message #${index + 1} has seq ${record.seq}` });
  });
  const ids = store.messages.map((record) => record.message.id);
  const repeated = ids.filter((id, index) => ids.indexOf(id) !== index);
  if (repeated.length > 0)
    violations.push({ invariant: 4, run, detail: `message ids stored twice: ${repeated.join(', ')}` });
  const acknowledged = new Set(located(journal, 'write-acked').map(writeKey));
  const ledger = new Map(store.ledger.map((entry) => [entry.toolCallId, entry]));
  for (const write of located(journal, 'write-start')) {
    const by = `${write.method} #${write.writeId} of ${writer(write)}`;
    const messages = write.messages ?? [];
    const present = messages.filter((message) => bySeq.get(message.seq) === message.id);
    if (acknowledged.has(writeKey(write))) {
      if (present.length < messages.length) {
        const lost = messages.filter((message) => !present.includes(message));
        violations.push({
          invariant: 4,
          run,
          detail: `the acknowledged ${by} lost ${lost.map((m) => `${m.role} message ${m.id} (seq ${m.seq})`).join(', ')}`,
        });
      }
      for (const execution of write.executions ?? []) {
        const stored = ledger.get(execution.toolCallId);
        if (execution.status === 'completed' && stored?.status !== 'completed') {
          violations.push({
            invariant: 4,
            run,
            detail: `the acknowledged ${by} completed "${execution.toolCallId}" in the ledger, which now says ${stored?.status ?? 'nothing'}`,
          });
        }
      }
    } else if (present.length > 0 && present.length < messages.length) {
      violations.push({
        invariant: 4,
        run,
        detail: `${by} is partial: ${present.length} of its ${messages.length} messages are stored`,
      });
    }
  }
}

function describeRun(evidence: RunEvidence): string {
  const latest = evidence.store.runs.at(-1);
  const records = Object.values(
    (evidence.store.threadState[toolCallsKey.name] ?? {}) as Record<string, ToolCallRecord>,
  );
  if (!latest) return 'no run record';
  const tickets =
    latest.openTickets.map((ticket) => `${ticket.toolCallId}/${ticket.id}`).join(', ') || 'none';
  const calls =
    records
      .map((record) => `${record.toolCallId}:${record.status}${record.ticket ? `/${record.ticket.id}` : ''}`)
      .join(', ') || 'none';
  return `run ${latest.identity.runId} is ${latest.status} (${latest.termination?.type ?? 'no termination'}) after ${latest.steps} steps; open tickets on the run record: ${tickets}; call records in the thread state: ${calls}`;
}

function checkEnding(evidence: RunEvidence, violations: Violation[]): void {
  const { run, store, stranded } = evidence;
  if (stranded !== undefined) {
    violations.push({ invariant: 5, run, detail: `stranded: ${stranded}; ${describeRun(evidence)}` });
    return;
  }
  const latest = store.runs.at(-1);
  const termination = latest?.termination;
  if (latest?.status !== 'done' || termination?.type !== 'natural-end') {
    const why = termination?.type === 'error' ? `: ${termination.error.message}` : '';
    violations.push({
      invariant: 5,
      run,
      detail: `did not finish its script${why}; ${describeRun(evidence)}`,
    });
    return;
  }
  if (latest.finalText !== run.finalText)
    violations.push({
      invariant: 5,
      run,
      detail: `ended with "${latest.finalText}", not "${run.finalText}"`,
    });
  for (const other of store.runs.slice(0, -1))
    if (other.status !== 'done')
      violations.push({
        invariant: 5,
        run,
        detail: `an earlier run ${other.identity.runId} is ${other.status}`,
      });
  const pending = Object.keys((store.threadState[toolCallsKey.name] ?? {}) as Record<string, unknown>);
  if (latest.openTickets.length > 0 || pending.length > 0) {
    violations.push({
      invariant: 5,
      run,
      detail: `run record and call states disagree with a finished run: ${describeRun(evidence)}`,
    });
  }
  // Every call of a finished run is answered, so the ledger says each one that started is completed.
  const unfinished = store.ledger.filter((entry) => entry.status !== 'completed');
  if (unfinished.length > 0) {
    violations.push({
      invariant: 5,
      run,
      detail: `a finished run left ledger entries in flight: ${unfinished.map((entry) => `${entry.toolName} ${entry.toolCallId} (${entry.attempts} attempts)`).join(', ')}`,
    });
  }
}

/** What the model must see for a call, by its gate and decision. */
function expectedOutcome(call: SoakCall): { status: ToolResult['status']; describe: string } {
  if (call.gate === 'deny' || call.gate === 'ask') return gatedOutcome(call);
  return { status: 'success', describe: 'allowed, so its success' };
}

function gatedOutcome(call: SoakCall): { status: ToolResult['status']; describe: string } {
  if (call.gate === 'deny') return { status: 'error', describe: 'denied by rule, so an error' };
  return call.decision === 'approve'
    ? { status: 'success', describe: 'approved, so its success' }
    : { status: 'error', describe: 'declined by the user, so an error' };
}

function checkAnswers(evidence: RunEvidence, violations: Violation[]): void {
  const { run, store } = evidence;
  const messages: Message[] = store.messages.map((record) => record.message);
  const finished = store.runs.at(-1)?.status === 'done';
  let step = 0;
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index] as Message;
    if (message.role !== 'assistant') continue;
    step++;
    const calls = message.content.flatMap((part) => (part.type === 'tool-call' ? [part.toolCallId] : []));
    const planned = run.steps[step - 1]?.calls.map((call) => call.toolCallId) ?? [];
    if (calls.join() !== planned.join()) {
      violations.push({
        invariant: 6,
        run,
        detail: `assistant message ${step} (seq ${index + 1}) calls [${calls.join(', ')}], the script's step ${step} [${planned.join(', ')}]: a step was lost or repeated`,
      });
    }
    const results: ToolResultPart[] = [];
    for (let next = index + 1; messages[next]?.role === 'tool'; next++)
      results.push(...((messages[next] as Message).content as ToolResultPart[]));
    const answered = results.map((part) => part.toolCallId);
    const stillWaiting = !finished && messages.slice(index + 1).every((later) => later.role === 'tool');
    if (
      stillWaiting &&
      answered.every((id) => calls.includes(id)) &&
      new Set(answered).size === answered.length
    )
      continue;
    if (answered.join() !== calls.join()) {
      violations.push({
        invariant: 6,
        run,
        detail: `step ${step} calls [${calls.join(', ')}] but its tool messages answer [${answered.join(', ')}]`,
      });
      continue;
    }
    for (const part of results) {
      const call = findCall(run, part.toolCallId)?.call;
      if (!call) continue;
      // A once tool cut off mid-way is failed as interrupted (it may or may not have taken effect).
      if (
        call.gate === 'once' &&
        part.result.status === 'error' &&
        part.result.metadata?.interrupted === true
      )
        continue;
      const expected = expectedOutcome(call);
      if (part.result.status !== expected.status || part.toolName !== soakTools[call.gate]) {
        violations.push({
          invariant: 6,
          run,
          detail: `"${part.toolCallId}" is ${expected.describe}, but the model was told ${part.result.status}: ${part.result.message ?? JSON.stringify(part.result.data)}`,
        });
      }
    }
  }
}

/** Every violation of the six invariants one run shows. */
/**
 * Two processes executing the thread's tools at once means both held the thread: an execution started while
 * another process had one started and not finished, and that process was not killed in between.
 */
function checkOverlaps(evidence: RunEvidence, violations: Violation[]): void {
  const { run, journal } = evidence;
  const running = new Map<number, Array<Entry<'execution-start'>>>();
  for (const entry of journal) {
    if (entry.type === 'killed') running.delete(entry.victim);
    else if (entry.type === 'execution-finish') {
      const open = running.get(entry.process) ?? [];
      running.set(
        entry.process,
        open.filter((start) => start.toolCallId !== entry.toolCallId),
      );
    } else if (entry.type === 'execution-start') {
      for (const [process, open] of running) {
        const other = open[0];
        if (process === entry.process || other === undefined) continue;
        violations.push({
          invariant: 7,
          run,
          detail: `"${entry.toolCallId}" started in ${writer(entry)} while ${writer(other)}, alive, was still executing "${other.toolCallId}"`,
        });
      }
      running.set(entry.process, [...(running.get(entry.process) ?? []), entry]);
    }
  }
}

/**
 * Every finished outbox call has exactly one row (its transaction committed once, with its completion), and no
 * row belongs to a call the run does not have. Stores without transactions are not checked.
 */
function checkOutbox(evidence: RunEvidence, violations: Violation[]): void {
  const { run, outbox, store } = evidence;
  if (outbox === undefined) return;
  const byCall = new Map<string, number>();
  for (const row of outbox) byCall.set(row.tool_call_id, (byCall.get(row.tool_call_id) ?? 0) + 1);
  for (const [toolCallId, count] of byCall) {
    if (count > 1)
      violations.push({ invariant: 9, run, detail: `"${toolCallId}" has ${count} outbox rows, not one` });
    if (findCall(run, toolCallId)?.call.gate !== 'outbox')
      violations.push({ invariant: 9, run, detail: `an outbox row for "${toolCallId}", not an outbox call` });
  }
  if (store.runs.at(-1)?.status !== 'done') return;
  for (const step of run.steps)
    for (const call of step.calls)
      if (call.gate === 'outbox' && !byCall.has(call.toolCallId))
        violations.push({
          invariant: 9,
          run,
          detail: `"${call.toolCallId}" finished without its outbox row`,
        });
}

export function checkRun(evidence: RunEvidence): Violation[] {
  const violations: Violation[] = [];
  checkOutbox(evidence, violations);
  checkGates(evidence, violations);
  checkReruns(evidence, violations);
  checkCommits(evidence, violations);
  checkEnding(evidence, violations);
  checkAnswers(evidence, violations);
  checkOverlaps(evidence, violations);
  return violations;
}
