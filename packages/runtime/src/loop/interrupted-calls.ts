import {
  INTERRUPTED_CALL_ACTION,
  type InterruptPolicy,
  type JsonSchema,
  type ToolCall,
  type ToolExecution,
} from '@lunation/contract';
import { type CallPlan, settle } from './call-plan.js';
import { interruptedResult } from './call-records.js';
import type { RunScope } from './run-scope.js';
import { parseArguments } from './storable.js';
import { announceTickets, reportResult, type ToolStage } from './tool-stage.js';

/**
 * The interrupt policy of a call (see the second table in `tool-calls.ts`): the plugins' most careful answer,
 * else the tool's, else the agent's, else `rerun`.
 */
export function interruptPolicy(scope: RunScope, call: ToolCall): InterruptPolicy {
  const { agent } = scope;
  const resolvers = agent.plugins.interruptPolicies;
  let policy: InterruptPolicy | undefined;
  if (resolvers.length > 0) {
    const parsed = parseArguments(call.arguments);
    const annotations = agent.tools.get(call.toolName)?.annotations;
    const request = {
      toolName: call.toolName,
      input: parsed.ok ? parsed.value : undefined,
      ...(annotations === undefined ? {} : { annotations }),
    };
    for (const resolve of resolvers) {
      const answer = resolve(request);
      if (answer !== undefined && (policy === undefined || CAREFUL[answer] > CAREFUL[policy]))
        policy = answer;
    }
  }
  return (
    policy ?? agent.tools.get(call.toolName)?.interruptPolicy ?? agent.definition.interruptPolicy ?? 'rerun'
  );
}

/**
 * An interrupted call (its ledger entry in flight from an attempt that died): `fail` settles it (its completion
 * rides in the next commit), `ask` suspends it with an `interrupted-call` ticket. True when so handled; false
 * under `rerun` (it runs again).
 */
export function handleInterrupted(
  stage: ToolStage,
  plan: CallPlan,
  entry: ToolExecution,
  policy: InterruptPolicy,
): boolean {
  if (policy === 'rerun') return false;
  const { call } = plan;
  if (policy === 'fail') {
    const result = interruptedResult('It will not run again.');
    settle(plan, 'failed', result);
    const { checkpointer } = stage;
    if (stage.scope.durable) checkpointer.ride(checkpointer.completion(entry, result));
    return true;
  }
  plan.attempts = entry.attempts;
  const parsed = parseArguments(call.arguments);
  stage.gate.suspend(plan, {
    action: INTERRUPTED_CALL_ACTION,
    message: `The call of "${call.toolName}" was cut off after it started (the process running it stopped), so it may or may not have taken effect. Run it again, treat it as done (with its result), or fail it?`,
    parameters: {
      toolName: call.toolName,
      arguments: parsed.ok ? ((parsed.value ?? null) as never) : call.arguments,
      idempotencyKey: entry.idempotencyKey,
      attempts: entry.attempts,
    },
    responseSchema: INTERRUPTED_CALL_RESPONSE_SCHEMA,
    resumeMode: 'pass-decision-to-tool',
  });
  return true;
}

/**
 * A resumed call may have been cut off in an earlier attempt: its interrupt policy decides first. True when
 * the policy settled or suspended it (it does not run now).
 */
export async function interruptedBefore(stage: ToolStage, plan: CallPlan): Promise<boolean> {
  const policy = interruptPolicy(stage.scope, plan.call);
  if (policy === 'rerun') return false;
  const entry = await stage.checkpointer.lookup(plan.runId, plan.call);
  if (
    entry?.status !== 'in-flight' ||
    entry.attempts <= (plan.attempts ?? 0) ||
    !handleInterrupted(stage, plan, entry, policy)
  ) {
    return false;
  }
  if (plan.status === 'suspended') announceTickets(stage.scope, [plan]);
  else reportResult(stage.scope, plan);
  return true;
}

/** How careful an interrupt policy is: the most careful answer of the plugins wins. */
const CAREFUL: Record<InterruptPolicy, number> = { rerun: 0, fail: 1, ask: 2 };

/** The response schema of an `interrupted-call` ticket (`interruptedCallPayloadSchema` as JSON Schema). */
const INTERRUPTED_CALL_RESPONSE_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    choice: { type: 'string', enum: ['rerun', 'done', 'fail'] },
    result: {},
    message: { type: 'string' },
  },
  required: ['choice'],
  additionalProperties: false,
};
