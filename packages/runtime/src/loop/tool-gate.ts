import type { IdSource, SuspensionTicket, ToolCall } from '@lunation/contract';
import type { ModelResponse, ToolGateDecision } from '../plugin.js';
import { type AnyTool, formatIssues, type TicketInput, toJsonSchema } from '../tool.js';
import { type CallPlan, errorResult, moveTo, settle } from './call-plan.js';
import type { RunScope } from './run-scope.js';
import { type Checked, checkToolResult, describeThrown, parseArguments, toStorableJson } from './storable.js';

/**
 * Decides a new call's gate outcome: the tool must exist and its arguments parse and validate, then the
 * ToolGate hooks run (block > suspend > set-result > pass). The call ends `allowed`, `suspended` with a
 * storable ticket, `denied`, or `failed` with a result the model sees.
 */
export class ToolGate {
  constructor(private readonly scope: RunScope) {}

  /** Whether ToolGate hooks must run (else `validate` alone decides). */
  get hasGates(): boolean {
    return this.scope.agent.plugins.gates.length > 0;
  }

  async decide(plan: CallPlan, response: ModelResponse | undefined): Promise<void> {
    this.validate(plan);
    const gates = this.scope.agent.plugins.gates;
    if (plan.status !== 'allowed' || gates.length === 0) return;
    const { scope } = this;
    const context = {
      ...scope.base(response, { ...plan.call, input: plan.input }),
      phase: 'ToolGate' as const,
      state: scope.state.snapshot(),
      tool: scope.agent.tools.get(plan.call.toolName),
    };
    let decision: ToolGateDecision | undefined;
    try {
      decision = strongest(await Promise.all(gates.map((entry) => entry.hook(context as never))));
    } catch (error) {
      // A gate that fails must not let the call through.
      settle(
        plan,
        'denied',
        errorResult(`The permission check of this call failed: ${describeThrown(error)}`),
      );
      return;
    }
    if (decision?.type === 'block') {
      plan.blocked = decision.reason;
      settle(plan, 'failed', errorResult(`Blocked: ${decision.reason}`, { blocked: true }));
    } else if (decision?.type === 'suspend') {
      this.suspend(plan, decision.ticket);
    } else if (decision?.type === 'set-result') {
      const result = checkToolResult(decision.result);
      if (!result.ok)
        settle(plan, 'denied', errorResult(`A gate answered this call with a bad result: ${result.problem}`));
      else settle(plan, result.value.status === 'error' ? 'denied' : 'succeeded', result.value);
    }
  }

  /**
   * A call that suspends for a decision gets its ticket, or an error result when no ticket can be stored.
   * True when it is suspended.
   */
  suspend(plan: CallPlan, input: TicketInput): boolean {
    const ticket = createTicket(plan, input, this.scope.ids);
    if (!ticket.ok) {
      settle(
        plan,
        'failed',
        errorResult(`This call needs a decision, but ${ticket.problem}. It did not run.`),
      );
      return false;
    }
    moveTo(plan, 'suspended');
    plan.ticket = ticket.value;
    plan.dirty = true;
    plan.newlySuspended = true;
    return true;
  }

  /**
   * Parses and validates the arguments of a call whose gate outcome is already known (resumed or recovered):
   * false, with the call failed, when they no longer parse or pass the tool's schema.
   */
  parse(plan: CallPlan, tool: AnyTool): boolean {
    const input = parseInput(plan, tool);
    if (input.ok) plan.input = input.value;
    else settle(plan, 'failed', errorResult(input.problem));
    return input.ok;
  }

  /** The tool must exist and the arguments parse (storably) and pass its input schema. */
  validate(plan: CallPlan): void {
    const { call } = plan;
    const { agent, options } = this.scope;
    const tool = agent.tools.get(call.toolName);
    const frontend = tool
      ? undefined
      : options.frontendTools.find((candidate) => candidate.name === call.toolName);
    if (!tool && !frontend) {
      const available = [...agent.tools.keys(), ...options.frontendTools.map((candidate) => candidate.name)];
      settle(
        plan,
        'failed',
        errorResult(`Unknown tool "${call.toolName}". Available tools: ${available.join(', ') || 'none'}.`),
      );
      return;
    }
    const parsed = parseInput(plan, tool);
    if (!parsed.ok) {
      settle(plan, 'failed', errorResult(parsed.problem));
      return;
    }
    const input = parsed.value;
    plan.input = input;
    moveTo(plan, 'allowed');
    if (frontend) {
      this.suspend(plan, {
        action: 'frontend-tool',
        message: `Run the client tool "${call.toolName}" and send its result`,
        parameters: (parsed.raw ?? null) as never,
        ...(frontend.responseSchema ? { responseSchema: frontend.responseSchema } : {}),
        resumeMode: 'use-decision-as-result',
      });
    }
  }
}

/** The call's arguments parsed, then checked by the tool's input schema (the raw JSON value kept too). */
function parseInput(plan: CallPlan, tool: AnyTool | undefined): Checked<unknown> & { raw?: unknown } {
  const { call } = plan;
  const parsed = parseArguments(call.arguments);
  if (!parsed.ok)
    return { ok: false, problem: `Invalid arguments for "${call.toolName}": ${parsed.problem}.` };
  if (!tool?.inputSchema) return { ok: true, value: parsed.value, raw: parsed.value };
  try {
    const checked = tool.inputSchema.safeParse(parsed.value);
    if (!checked.success) {
      return {
        ok: false,
        problem: `Invalid arguments for "${call.toolName}": ${formatIssues(checked.error)}`,
      };
    }
    return { ok: true, value: checked.data, raw: parsed.value };
  } catch (error) {
    return { ok: false, problem: `Invalid arguments for "${call.toolName}": ${describeThrown(error)}` };
  }
}

/** A ticket for a call, checked to be storable. */
function createTicket(plan: CallPlan, input: TicketInput, ids: IdSource): Checked<SuspensionTicket> {
  const call: ToolCall = plan.call;
  try {
    if (typeof input?.message !== 'string')
      return { ok: false, problem: 'its approval request has no message' };
    const parameters = toStorableJson(input.parameters);
    if (!parameters.ok)
      return { ok: false, problem: `its approval request cannot be stored: ${parameters.problem}` };
    let responseSchema: SuspensionTicket['responseSchema'];
    if (input.responseSchema !== undefined) {
      const schema = toStorableJson(toJsonSchema(input.responseSchema));
      if (!schema.ok)
        return { ok: false, problem: `its response schema cannot be stored: ${schema.problem}` };
      responseSchema = schema.value as SuspensionTicket['responseSchema'];
    }
    return {
      ok: true,
      value: {
        id: ids.id(),
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        arguments: call.arguments,
        action: input.action ?? 'approve',
        message: input.message,
        ...(parameters.value === undefined ? {} : { parameters: parameters.value }),
        ...(responseSchema === undefined ? {} : { responseSchema }),
        resumeMode: input.resumeMode ?? 'replay-tool-call',
        runId: plan.runId,
      },
    };
  } catch (error) {
    return { ok: false, problem: `its approval request could not be made: ${describeThrown(error)}` };
  }
}

function strongest(
  decisions: ReadonlyArray<ToolGateDecision | undefined | void>,
): ToolGateDecision | undefined {
  let best: ToolGateDecision | undefined;
  const rank = { block: 3, suspend: 2, 'set-result': 1 } as const;
  for (const decision of decisions) {
    if (decision && (!best || rank[decision.type] > rank[best.type])) best = decision;
  }
  return best;
}
