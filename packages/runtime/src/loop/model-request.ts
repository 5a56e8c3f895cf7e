import type { Message, ModelRequest, ToolDescriptor } from '@lunation/contract';
import type { ResolvedAgent } from '../agent.js';
import { applyCompaction, truncateMessages } from '../context-policy.js';
import type { RequestDraft } from '../plugin.js';
import { requestAdjustmentsKey } from '../runtime-keys.js';
import type { RunScope } from './run-scope.js';
import { responseFormat } from './structured-output.js';

/**
 * The next model request: the system prompt, the history as the context policy shapes it (compaction,
 * truncation), the tools (agent and client tools, minus exclusions), context messages and overrides asked for
 * by BeforeInference actions (consumed here), then the plugins' request transforms.
 */
export function buildRequest(scope: RunScope): ModelRequest {
  const { agent, state } = scope;
  const adjustments = state.written(requestAdjustmentsKey) ? state.peek(requestAdjustmentsKey) : undefined;
  const policy = agent.definition.context;
  // The thread's own list, unless the policy shapes it: its messages are copied into the request below.
  let history: readonly Message[] = policy?.compaction ? applyCompaction(scope.messages) : scope.messages;
  if (policy?.maxTokens !== undefined) history = truncateMessages(history, policy);
  const system = systemMessage(agent);
  let messages: Message[];
  let tools: ToolDescriptor[] = agent.descriptors as ToolDescriptor[];
  const { frontendTools } = scope.options;
  if (frontendTools.length > 0) tools = [...tools, ...frontendTools];
  let overrides: NonNullable<ModelRequest['overrides']> = agent.definition.overrides ?? NO_OVERRIDES;
  if (adjustments) {
    messages = system ? [system] : [];
    for (const context of adjustments.contextMessages) {
      if ((context.position ?? 'end') === 'system')
        messages.push(contextMessage(context.key, context.role, context.text));
    }
    messages.push(...history);
    for (const context of adjustments.contextMessages) {
      if ((context.position ?? 'end') === 'end')
        messages.push(contextMessage(context.key, context.role, context.text));
    }
    if (adjustments.excludedTools.length > 0) {
      tools = tools.filter((tool) => !adjustments.excludedTools.includes(tool.name));
    }
    if (adjustments.onlyTools) tools = tools.filter((tool) => adjustments.onlyTools?.includes(tool.name));
    overrides = { ...overrides, ...adjustments.overrides };
    state.write([{ key: requestAdjustmentsKey, update: { type: 'reset' } }]);
  } else {
    // One copy of exactly the right size (pushing into an empty array would grow it step by step).
    messages = system ? [system].concat(history) : history.slice();
  }
  const format = responseFormat(scope);
  const transforms = agent.plugins.transforms;
  if (transforms.length === 0) {
    return format ? { messages, tools, overrides, responseFormat: format } : { messages, tools, overrides };
  }
  let draft: RequestDraft = { messages, tools, overrides };
  for (const transform of transforms) {
    draft = transform(draft, { identity: scope.identity, step: scope.progress.step });
  }
  return {
    messages: draft.messages,
    tools: draft.tools,
    overrides: draft.overrides,
    ...(format ? { responseFormat: format } : {}),
  };
}

/** The agent's system prompt as a message, made once per agent (the request's messages are not changed by anyone). */
const systemMessages = new WeakMap<ResolvedAgent, Message>();

function systemMessage(agent: ResolvedAgent): Message | undefined {
  const prompt = agent.definition.systemPrompt;
  if (!prompt) return undefined;
  let message = systemMessages.get(agent);
  if (message === undefined) {
    message = { id: `system:${agent.id}`, role: 'system', content: [{ type: 'text', text: prompt }] };
    systemMessages.set(agent, message);
  }
  return message;
}

const NO_OVERRIDES: NonNullable<ModelRequest['overrides']> = Object.freeze({});

function contextMessage(key: string, role: 'system' | 'user', text: string): Message {
  return {
    id: `context:${key}`,
    role,
    content: [{ type: 'text', text }],
    metadata: { visibility: 'internal' },
  };
}
