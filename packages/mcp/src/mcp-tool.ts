import type {
  JsonObject,
  JsonSchema,
  JsonValue,
  PortableTool,
  PortableToolContext,
  ToolAnnotations,
} from '@lunation/contract';
import type { Tool } from '@modelcontextprotocol/client';
import { toJson, toToolResult } from './call-result.js';
import {
  type CallRound,
  callFailure,
  DEFAULT_CALL_TIMEOUT_MS,
  type InputRequired,
  type McpConnection,
} from './mcp-connection.js';

/** The `_meta` key of a call's idempotency key: the same for every attempt of one tool call, also after a crash. */
export const MCP_IDEMPOTENCY_KEY_META = 'dev.lunation/idempotency-key';
/** The `action` of a ticket for a server's request for input; answer with {@link McpInputDecisionPayload}. */
export const MCP_INPUT_ACTION = 'mcp-input';

/** The parameters of an {@link MCP_INPUT_ACTION} ticket: what the server asked, by input key. */
export interface McpInputTicketParameters {
  readonly server: string;
  readonly tool: string;
  /** The server's requests (`elicitation/create` with its `message` and `requestedSchema`), by key. */
  readonly inputRequests: Record<string, { method: string; params?: JsonValue }>;
}

/** The payload of a decision answering an {@link MCP_INPUT_ACTION} ticket: an elicitation result per key. */
export type McpInputDecisionPayload = {
  responses: Record<string, { action: 'accept' | 'decline' | 'cancel'; content?: Record<string, JsonValue> }>;
};

/** Milliseconds the runtime's own timeout of an MCP tool waits beyond the call's, so the call's fires first. */
const RUNTIME_TIMEOUT_MARGIN_MS = 2_000;

/** A server's tool as a Lunation tool: gated, ledgered, suspendable like any other. */
export function mcpTool(
  connection: McpConnection,
  tool: Tool,
  name: string,
  options: { elicitation: boolean },
): PortableTool {
  const server = connection.config.name;
  const callTimeoutMs = connection.config.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  const parameters = (toJson(tool.inputSchema) ?? { type: 'object' }) as JsonSchema;
  delete (parameters as Record<string, unknown>).$schema;
  return {
    descriptor: {
      name,
      description: tool.description ?? tool.title ?? `The tool "${tool.name}" of the MCP server "${server}".`,
      parameters,
    },
    inputSchema: undefined,
    timeoutMs: callTimeoutMs === 0 ? 0 : callTimeoutMs + RUNTIME_TIMEOUT_MARGIN_MS,
    annotations: annotationsOf(tool),
    execute: (input, context) => callMcpTool(connection, tool.name, input, context, options.elicitation),
  };
}

/** The tool's annotations with MCP's defaults filled in (not read-only, destructive, not idempotent, open). */
function annotationsOf(tool: Tool): ToolAnnotations {
  const given = (tool.annotations ?? {}) as ToolAnnotations;
  const readOnlyHint = given.readOnlyHint ?? false;
  return {
    ...(given.title !== undefined ? { title: given.title } : {}),
    readOnlyHint,
    destructiveHint: readOnlyHint ? false : (given.destructiveHint ?? true),
    idempotentHint: given.idempotentHint ?? false,
    openWorldHint: given.openWorldHint ?? true,
  };
}

async function callMcpTool(
  connection: McpConnection,
  toolName: string,
  input: unknown,
  context: PortableToolContext,
  elicitation: boolean,
): Promise<unknown> {
  const server = connection.config.name;
  const responses = answersOf(context);
  const metadata = (extra: JsonObject = {}): JsonObject => ({
    mcp: {
      server,
      tool: toolName,
      ...(connection.protocolVersion ? { protocolVersion: connection.protocolVersion } : {}),
      ...extra,
    },
  });
  const fail = (message: string, extra: JsonObject = {}) =>
    context.output({ status: 'error', message, metadata: metadata(extra) });
  const meta: Record<string, unknown> = {
    [MCP_IDEMPOTENCY_KEY_META]: context.idempotencyKey,
    'dev.lunation/tool-call-id': context.toolCallId,
    ...(context.rerun ? { 'dev.lunation/rerun': true } : {}),
  };
  const timeoutMs = connection.config.timeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
  // Reconnecting stops when the call's time is up (a call without a timeout reconnects for the default's).
  const deadline = Date.now() + (timeoutMs === 0 ? DEFAULT_CALL_TIMEOUT_MS : timeoutMs);
  let requestState: string | undefined;
  // A dropped connection (a server restart) is reconnected with back-off and jitter until the call's deadline,
  // and the call sent again once, with the same idempotency key marked as a re-run; a 2026-07-28 server
  // answering `input_required` to the answered call gets it again with its requestState.
  for (let attempt = 0, resent = false; attempt < 3; attempt++) {
    const round: CallRound = { answers: responses, unanswered: {}, asked: 0 };
    let outcome: Awaited<ReturnType<McpConnection['call']>>;
    try {
      outcome = await connection.call(
        toolName,
        input,
        {
          meta,
          signal: context.signal,
          timeoutMs: timeoutMs === 0 ? 2 ** 31 - 1 : Math.max(1, deadline - Date.now()),
          deadline,
          ...(responses ? { inputResponses: responses } : {}),
          ...(requestState !== undefined ? { requestState } : {}),
          onProgress: (progress) => context.reportProgress(toJson(progress) ?? null),
        },
        round,
      );
    } catch (error) {
      if (context.signal.aborted) throw error; // the runtime's timeout or the run's cancellation
      const failure = callFailure(error);
      if (failure.disconnected && !resent) {
        resent = true;
        meta['dev.lunation/rerun'] = true;
        try {
          await connection.reconnect(deadline, context.signal);
        } catch (reconnectError) {
          if (context.signal.aborted) throw reconnectError;
          return fail(
            `The MCP server "${server}" failed the call of "${toolName}": ${reconnectError instanceof Error ? reconnectError.message : String(reconnectError)}`,
            { disconnected: true },
          );
        }
        continue;
      }
      if (failure.timedOut) {
        return fail(`The MCP server "${server}" did not answer "${toolName}" within ${timeoutMs} ms.`, {
          timedOut: true,
        });
      }
      return fail(
        `The MCP server "${server}" failed the call of "${toolName}": ${connection.describe(error)}`,
        {
          ...(failure.disconnected ? { disconnected: true } : {}),
        },
      );
    }
    if (!isInputRequired(outcome)) {
      return context.output(toToolResult(outcome, metadata()));
    }
    if (responses === undefined) {
      if (context.decision !== undefined) {
        // A call resumed by a decision (an approval) cannot suspend again.
        return fail(
          `The MCP server "${server}" asked for input to run "${toolName}" after the call was approved; call it again to answer.`,
          { inputRequired: true },
        );
      }
      if (!elicitation) {
        return fail(
          `The MCP server "${server}" asked for input to run "${toolName}", but this agent cannot ask the user.`,
          { inputRequired: true },
        );
      }
      return context.suspend(inputTicket(server, toolName, outcome));
    }
    const unanswered = Object.keys(outcome.inputRequests).filter((key) => !(key in responses));
    if (unanswered.length > 0 || outcome.requestState === undefined || requestState !== undefined) {
      return fail(
        `The MCP server "${server}" asked again for input to run "${toolName}" after it was answered${unanswered.length > 0 ? ` (${unanswered.join(', ')})` : ''}.`,
        { inputRequired: true },
      );
    }
    requestState = outcome.requestState;
  }
  return fail(`The MCP server "${server}" could not be reached again for "${toolName}".`, {
    disconnected: true,
  });
}

function isInputRequired(outcome: unknown): outcome is InputRequired {
  return (outcome as { kind?: unknown }).kind === 'input-required';
}

/** The answers a resumed call carries: a decision answering an {@link MCP_INPUT_ACTION} ticket. */
function answersOf(context: PortableToolContext): Record<string, unknown> | undefined {
  const { decision } = context;
  if (decision?.action !== 'resume') return undefined;
  const payload = decision.payload as { responses?: unknown } | null | undefined;
  const responses = payload?.responses;
  if (typeof responses !== 'object' || responses === null || Array.isArray(responses)) return undefined;
  return responses as Record<string, unknown>;
}

function inputTicket(server: string, tool: string, outcome: InputRequired) {
  const inputRequests: McpInputTicketParameters['inputRequests'] = {};
  for (const [key, request] of Object.entries(outcome.inputRequests)) {
    const params = toJson(request.params);
    inputRequests[key] = { method: request.method, ...(params !== undefined ? { params } : {}) };
  }
  const messages = Object.values(inputRequests)
    .map((request) => (request.params as { message?: unknown } | undefined)?.message)
    .filter((message): message is string => typeof message === 'string');
  const keys = Object.keys(inputRequests);
  const parameters: McpInputTicketParameters = { server, tool, inputRequests };
  return {
    action: MCP_INPUT_ACTION,
    message:
      messages.length > 0 ? messages.join('\n') : `The MCP server "${server}" needs input to run "${tool}".`,
    parameters: parameters as unknown as JsonValue,
    responseSchema: {
      type: 'object',
      properties: {
        responses: {
          type: 'object',
          properties: Object.fromEntries(
            keys.map((key) => [
              key,
              {
                type: 'object',
                properties: {
                  action: { enum: ['accept', 'decline', 'cancel'] },
                  content: { type: 'object' },
                },
                required: ['action'],
              },
            ]),
          ),
          required: keys,
        },
      },
      required: ['responses'],
    } as JsonSchema,
    resumeMode: 'pass-decision-to-tool' as const,
  };
}
