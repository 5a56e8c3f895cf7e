import {
  type IdSource,
  LunationError,
  type ModelCallOptions,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
} from '@lunation/contract';
import { resolveRetryPolicy, streamWithRetries } from '@lunation/contract/provider-utils';
import { ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import type { SimulatedProcess } from './scheduler.js';
import type { WorldContext } from './world-context.js';
import { modelFailure, modelIdleTimeoutMs } from './world-faults.js';
import { planOf, type WorldToolName } from './world-tools.js';

/** The tools a step may call more than once (`RuntimeWorldOptions.repeatedCalls`): gated, or not simply re-run. */
const repeatable: ReadonlySet<WorldToolName> = new Set(['refund', 'notify', 'invoice']);

/**
 * The model of one worker process: a scripted answer per call (a run's first step calls the tools its input names,
 * all at once; its next step answers), each attempt an operation of the process, behind the providers' own retry
 * loop (`streamWithRetries` on the process's clock and ids): a faulty attempt fails retryably, answers late, or
 * never answers until the idle timeout gives it up.
 */
export class WorldModel implements ModelProvider {
  readonly specificationVersion = 'v1' as const;
  readonly provider = 'world';
  readonly modelId = 'scripted';
  private readonly scripted: ScriptedModel;
  private readonly policy = resolveRetryPolicy({ maxRetries: 3, initialDelayMs: 200 }, undefined);

  constructor(
    private readonly world: WorldContext,
    private readonly process: SimulatedProcess,
    private readonly ids: IdSource,
  ) {
    this.scripted = new ScriptedModel((request) => this.answer(request));
  }

  stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncIterable<ModelStreamPart> {
    const { clock } = this.process;
    return streamWithRetries({
      policy: this.policy,
      signal: options.signal,
      attempt: (signal) => this.scripted.stream(request, { signal }),
      cancelled: () => new LunationError('cancelled', 'The model call was aborted'),
      idleTimeoutMs: modelIdleTimeoutMs,
      clock,
      ids: this.ids,
    });
  }

  private answer(request: ModelRequest): Promise<ScriptedResponse> {
    const { scheduler, workerFaults } = this.world;
    const lastUser = request.messages.filter((message) => message.role === 'user').at(-1);
    const text = lastUser?.content[0]?.type === 'text' ? lastUser.content[0].text : '';
    const { fault, delayMs } = workerFaults.model();
    if (fault === 'hang') return new Promise<ScriptedResponse>(() => {});
    const answered = request.messages.at(-1)?.role === 'tool';
    const plan = planOf(text);
    const response: ScriptedResponse =
      answered || plan.length === 0
        ? { text: `done: ${text}` }
        : {
            text: 'working',
            toolCalls: this.repeated(plan).map((toolName, index) => ({
              toolName,
              arguments: { amount: index + 1 },
            })),
          };
    return scheduler.operation(
      this.process,
      `model ${text}${fault === 'none' ? '' : ` (${fault})`}`,
      () => {
        if (fault === 'error') throw modelFailure();
        return response;
      },
      { delayMs },
    );
  }

  /**
   * The step's calls: the plan's tools, each gated or interrupt-kind one called two or three times with the
   * world's `repeatedCalls` chance (nothing drawn without it, so the other profiles keep their traces).
   */
  private repeated(plan: readonly WorldToolName[]): WorldToolName[] {
    const chance = this.world.repeatedCalls ?? 0;
    if (chance <= 0) return [...plan];
    const random = this.world.scheduler.stream('model-calls');
    return plan.flatMap((toolName) =>
      repeatable.has(toolName) && random.chance(chance)
        ? Array.from({ length: random.int(2, 3) }, () => toolName)
        : [toolName],
    );
  }
}
