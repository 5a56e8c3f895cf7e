import type { Message, ToolResultPart } from '@lunation/contract';
import type { FuzzEvent } from './fuzz-tools.js';
import { type FuzzCall, type FuzzRun, fuzzToolNames } from './hostile-calls.js';

/** How a fuzz run ended: the runtime's last result, or what `run()` / `sendDecisions()` threw. */
export type FuzzEnding = { status: string; termination: string; error?: string } | { thrown: string };

export interface FuzzEvidence {
  run: FuzzRun;
  ending: FuzzEnding;
  /** The thread as the runtime left it (the store's messages, or the runs' own without a store). */
  messages: Message[];
  /** The messages of the model's last request before the run ended: what it saw. */
  seen: Message[] | undefined;
  /** This thread's tool executions and decisions, in order. */
  events: FuzzEvent[];
}

export interface FuzzProblem {
  /** What went wrong, without run-specific values, so that problems group. */
  kind: string;
  run: number;
  detail: string;
}

function describeEnding(ending: FuzzEnding): string {
  if ('thrown' in ending) return `threw ${ending.thrown}`;
  return `ended ${ending.status} (${ending.termination}${ending.error ? `: ${ending.error}` : ''})`;
}

/** JSON text of a value the runtime let through, even one that cannot be serialised. */
function json(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(typeof value);
  } catch (error) {
    return `(not JSON: ${(error as Error).message})`;
  }
}

function resultText(part: ToolResultPart | undefined): string {
  if (!part) return 'no result';
  const { status, message, data } = part.result;
  return `${json(status)}: ${typeof message === 'string' ? message : json(message ?? data)}`.slice(0, 200);
}

/** A message the model can act on: a non-empty string that is not an unhelpful conversion. */
function isClear(message: unknown): boolean {
  return typeof message === 'string' && message.trim().length > 0 && !message.includes('[object Object]');
}

/**
 * Tool executions: never for a call that must not run, never twice, a gated one only after its approval (in
 * any step, also after a failed run and the user's next message), and once for a call that must run in a
 * step the run completed.
 */
function checkExecutions(evidence: FuzzEvidence, complete: number, problems: FuzzProblem[]): void {
  const { run, events } = evidence;
  run.steps.forEach((step, index) => {
    for (const call of step.calls) {
      if (!call.nonce) continue;
      const executions = events.filter((event) => event.type === 'execution' && event.nonce === call.nonce);
      const say = (detail: string) =>
        problems.push({ kind: `${call.label}: ${detail}`, run: run.index, detail });
      if (executions.length > 1) say(`the tool ran ${executions.length} times`);
      if (call.runs === 'no' && executions.length > 0) say('the tool ran although the call must not run');
      if (call.runs === 'yes' && executions.length === 0 && index < complete) say('the tool never ran');
      if (call.toolName === fuzzToolNames.gated && executions.length > 0) {
        const at = events.indexOf(executions[0] as FuzzEvent);
        const approved = events
          .slice(0, at)
          .some(
            (event) =>
              event.type === 'decision' && event.toolCallId === call.toolCallId && event.action === 'resume',
          );
        if (!approved) say('the gated tool ran without an approving decision');
      }
    }
  });
}

function checkAnswer(
  call: FuzzCall,
  part: ToolResultPart | undefined,
  run: number,
  problems: FuzzProblem[],
): void {
  const say = (kind: string, detail: string) =>
    problems.push({ kind: `${call.label}: ${kind}`, run, detail });
  if (!part) {
    say('no result', `call "${call.toolCallId}" (${call.toolName.slice(0, 40)}) got no result`);
    return;
  }
  const { result } = part;
  if (call.expect !== 'either' && result.status !== call.expect)
    say(
      `model told ${json(result.status)}`,
      `expected ${call.expect}, the model was told ${resultText(part)}`,
    );
  if (result.status === 'error' && !isClear(result.message))
    say('unclear error message', `the error result's message is ${json(result.message).slice(0, 200)}`);
  // Quoted: a nonce such as n103_1 is a prefix of n103_10, which may be this call's own.
  if (call.notResultOf && json(result).includes(JSON.stringify(call.notResultOf)))
    say(
      'earlier result replayed',
      `the result is the earlier call's (${call.notResultOf}): ${resultText(part)}`,
    );
}

/** Calls of step `index` in the thread, with the tool results that follow them. */
function stepMessages(
  messages: Message[],
  step: number,
): { calls: string[]; results: ToolResultPart[] } | undefined {
  let seenSteps = 0;
  for (let index = 0; index < messages.length; index++) {
    const message = messages[index] as Message;
    if (message.role !== 'assistant' || ++seenSteps !== step) continue;
    const calls = message.content.flatMap((part) => (part.type === 'tool-call' ? [part.toolCallId] : []));
    const results: ToolResultPart[] = [];
    for (let next = index + 1; messages[next]?.role === 'tool'; next++)
      results.push(...((messages[next] as Message).content as ToolResultPart[]));
    return { calls, results };
  }
  return undefined;
}

/** Results of the steps the run completed: one per call, as expected, with a clear message when an error. */
function checkAnswers(evidence: FuzzEvidence, complete: number, problems: FuzzProblem[]): void {
  const { run, messages } = evidence;
  for (let step = 1; step <= complete; step++) {
    const planned = run.steps[step - 1]?.calls ?? [];
    const found = stepMessages(messages, step);
    if (!found) {
      problems.push({
        kind: 'assistant message lost',
        run: run.index,
        detail: `step ${step} completed, but the thread has no assistant message for it`,
      });
      continue;
    }
    if (found.calls.length !== planned.length) {
      problems.push({
        kind: 'assistant message lost calls',
        run: run.index,
        detail: `step ${step}: the model made ${planned.length} calls, the thread keeps ${found.calls.length}`,
      });
      continue;
    }
    const used = new Map<string, number>();
    planned.forEach((call, position) => {
      const id = found.calls[position] as string;
      const occurrence = used.get(id) ?? 0;
      used.set(id, occurrence + 1);
      const part = found.results.filter((result) => result.toolCallId === id)[occurrence];
      checkAnswer(call, part, run.index, problems);
    });
    for (const [id, count] of used) {
      const answered = found.results.filter((result) => result.toolCallId === id).length;
      if (answered > count)
        problems.push({
          kind: 'call answered more than once',
          run: run.index,
          detail: `step ${step}: call id "${id}" made ${count} time(s) is answered ${answered} times`,
        });
    }
  }
}

/** What the model saw of the tool results must be what the thread keeps. */
function checkSeen(evidence: FuzzEvidence, problems: FuzzProblem[]): void {
  const { seen, messages, run, ending } = evidence;
  if (!seen || 'thrown' in ending || ending.termination !== 'natural-end') return;
  const results = (list: Message[]) =>
    list.flatMap((message) => (message.role === 'tool' ? message.content : [])).map((part) => json(part));
  const kept = results(messages);
  const shown = results(seen);
  const differing = kept.findIndex((part, index) => part !== shown[index]);
  if (kept.length !== shown.length || differing >= 0) {
    problems.push({
      kind: 'kept results differ from what the model saw',
      run: run.index,
      detail: `result #${differing + 1}: kept ${kept[differing]?.slice(0, 160)}, seen ${shown[differing]?.slice(0, 160)}`,
    });
  }
}

/** Every way one fuzz run broke the rules: a run never fails, every call gets a clear result, gates hold. */
export function checkFuzzRun(evidence: FuzzEvidence): FuzzProblem[] {
  const problems: FuzzProblem[] = [];
  const { run, ending, seen } = evidence;
  const finished = !('thrown' in ending) && ending.status === 'done' && ending.termination === 'natural-end';
  // The step of the model's last answer is the one a failed run failed in; the steps before it are complete.
  const failedIn = (seen ?? []).filter((message) => message.role === 'assistant').length + 1;
  const complete = finished ? run.steps.length : failedIn - 1;
  if (!finished) {
    const labels = run.steps[failedIn - 1]?.calls.map((call) => call.label) ?? [];
    const error = 'thrown' in ending ? ending.thrown : (ending.error ?? ending.termination);
    const kind = error
      .replace(/"[^"]*"/g, '"…"')
      .replace(/\s+/g, ' ')
      .slice(0, 160);
    problems.push({
      kind: `run failed: ${kind}`,
      run: run.index,
      detail: `the run ${describeEnding(ending)} in step ${failedIn}, whose calls were: ${labels.join('; ')}`,
    });
  }
  checkExecutions(evidence, complete, problems);
  checkAnswers(evidence, complete, problems);
  checkSeen(evidence, problems);
  return problems;
}
