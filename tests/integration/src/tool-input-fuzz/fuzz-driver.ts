import {
  LunationError,
  type LunationStore,
  type Message,
  type ModelRequest,
  type ResumeDecision,
} from '@lunation/contract';
import { type AgentRuntime, createRuntime, permissionPlugin, type RunResult } from '@lunation/runtime';
import { reply, ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import type { FuzzEnding, FuzzEvidence } from './fuzz-checks.js';
import { createFuzzTools, type FuzzEvent } from './fuzz-tools.js';
import { type FuzzRun, fuzzToolNames } from './hostile-calls.js';

const inputPrefix = 'fuzz run ';

function threadId(run: FuzzRun): string {
  return `fuzz-${run.index}`;
}

/** Text for any thrown value, even one whose conversions throw. */
function printable(value: unknown): string {
  try {
    return String(value);
  } catch {
    return '(a value that cannot be printed)';
  }
}

function firstUserText(request: ModelRequest): string {
  const user = request.messages.find((message) => message.role === 'user');
  return user?.content.map((part) => (part.type === 'text' ? part.text : '')).join('') ?? '';
}

/** Drives fuzz runs on one runtime (with or without a store) and gathers what each left behind. */
export class FuzzDriver {
  private readonly plans = new Map<number, FuzzRun>();
  private readonly lastRequests = new Map<number, ModelRequest>();
  private readonly events: FuzzEvent[] = [];
  private readonly runtime: AgentRuntime;

  constructor(private readonly store: LunationStore | undefined) {
    const model = new ScriptedModel((request) => this.answer(request));
    const builder = createRuntime()
      .model('scripted', model)
      .agent({
        id: 'fuzz',
        model: 'scripted',
        tools: createFuzzTools(this.events),
        plugins: [
          { plugin: permissionPlugin, config: { rules: [{ tool: fuzzToolNames.gated, decision: 'ask' }] } },
        ],
      });
    this.runtime = (store ? builder.store(store) : builder).build();
  }

  /** Tool executions and decisions so far, across runs. */
  get eventCount(): { executions: number; decisions: number } {
    return {
      executions: this.events.filter((event) => event.type === 'execution').length,
      decisions: this.events.filter((event) => event.type === 'decision').length,
    };
  }

  /** The model's next answer: the run's next step (by the number of assistant messages so far), then a reply. */
  private answer(request: ModelRequest): ScriptedResponse {
    const index = Number(firstUserText(request).slice(inputPrefix.length));
    const run = this.plans.get(index);
    if (!run) throw new Error(`the fuzz model got a request for an unknown run: "${firstUserText(request)}"`);
    this.lastRequests.set(index, request);
    const step = run.steps[request.messages.filter((message) => message.role === 'assistant').length];
    if (!step) return reply(`fuzz run ${index} done`);
    return {
      toolCalls: step.calls.map((call) => ({
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        arguments: call.arguments,
      })),
    };
  }

  private decisionsFor(run: FuzzRun, result: RunResult): ResumeDecision[] {
    return result.openTickets.map((ticket) => {
      const call = run.steps
        .flatMap((step) => step.calls)
        .find((item) => item.toolCallId === ticket.toolCallId);
      const action = call?.decision === 'approve' ? 'resume' : 'cancel';
      this.events.push({ type: 'decision', threadId: threadId(run), toolCallId: ticket.toolCallId, action });
      return { decisionId: `decision-${ticket.id}`, ticketId: ticket.id, action };
    });
  }

  /**
   * After a failed run the user writes again: whatever the failed run left behind must not run a gated call
   * without its decision now. The new run's own outcome is not judged.
   */
  private async sendNextMessage(id: string): Promise<void> {
    try {
      await (await this.runtime.run({ threadId: id, input: 'Please carry on.' })).result;
    } catch {
      // A thread the runtime refuses to continue is judged by the first run's failure already.
    }
  }

  /** Runs one plan to its end, answering every ticket as the plan says. */
  async drive(run: FuzzRun): Promise<FuzzEvidence> {
    this.plans.set(run.index, run);
    const id = threadId(run);
    const messages: Message[] = [];
    let ending: FuzzEnding;
    let failed = false;
    try {
      const handle = await this.runtime.run({ threadId: id, input: `${inputPrefix}${run.index}` });
      let result = await handle.result;
      messages.push(...result.messages);
      for (let round = 0; result.termination.type === 'suspended' && round < 20; round++) {
        const outcome = await this.runtime.sendDecisions(id, this.decisionsFor(run, result));
        if (!outcome.run) break;
        result = await outcome.run.result;
        messages.push(...result.messages);
      }
      const { termination } = result;
      ending = {
        status: result.status,
        termination: termination.type,
        ...(termination.type === 'error' ? { error: termination.error.message } : {}),
      };
      failed = termination.type !== 'natural-end';
    } catch (error) {
      ending = {
        thrown: LunationError.isInstance(error) ? `${error.code}: ${error.message}` : printable(error),
      };
    }
    const seen = this.lastRequests.get(run.index)?.messages;
    if (failed) await this.sendNextMessage(id);
    const stored = this.store
      ? (await this.store.listMessages(id)).map((record) => record.message)
      : messages;
    return {
      run,
      ending,
      messages: stored,
      seen,
      events: this.events.filter((event) => event.threadId === id),
    };
  }
}
