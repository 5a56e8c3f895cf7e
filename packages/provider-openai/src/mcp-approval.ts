import type { FrontendToolDescriptor, JsonObject, ToolResult } from '@lunation/contract';

/**
 * The client-side tool an MCP approval request of the Responses API arrives as. OpenAI asks before a hosted MCP
 * tool (`hostedTools: [{ type: 'mcp', require_approval: ... }]`) runs: the adapter streams each
 * `mcp_approval_request` as a call of this tool (the call id is the request's id), so the run suspends on a
 * ticket like any approval; the call's result goes back as `mcp_approval_response` on the next request. Pass it
 * as a frontend tool (`frontendTools: [mcpApprovalTool]`) and answer the ticket with `{ approve: true }` or
 * `{ approve: false, reason }`, or register a runtime tool of the same name behind an `ask` permission rule. The
 * model is never offered this tool: the adapter leaves it out of the function tools it sends.
 */
export const mcpApprovalTool = {
  name: 'openai_mcp_approval',
  description:
    'Approval of a call of a hosted MCP tool that OpenAI asked for (mcp_approval_request); answer with { approve, reason? }.',
  parameters: {
    type: 'object',
    properties: {
      serverLabel: { type: 'string', description: 'The MCP server (server_label).' },
      toolName: { type: 'string', description: 'The MCP tool the model wants to call.' },
      arguments: { description: 'The arguments of that call (parsed when they are JSON).' },
    },
    required: ['serverLabel', 'toolName', 'arguments'],
  },
  responseSchema: {
    type: 'object',
    properties: { approve: { type: 'boolean' }, reason: { type: 'string' } },
    required: ['approve'],
    additionalProperties: false,
  },
} as const satisfies FrontendToolDescriptor;

/** What a call of {@link mcpApprovalTool} carries: the MCP call waiting for approval. */
export interface McpApprovalArguments {
  serverLabel: string;
  toolName: string;
  arguments: unknown;
}

interface McpApprovalRequestItem {
  id: string;
  server_label: string;
  name: string;
  arguments: string;
}

/** The approval tool's arguments for an `mcp_approval_request` item. */
export function approvalArguments(item: McpApprovalRequestItem): string {
  let parsed: unknown = item.arguments;
  try {
    parsed = JSON.parse(item.arguments);
  } catch {
    // Kept as the raw text.
  }
  const value: McpApprovalArguments = {
    serverLabel: item.server_label,
    toolName: item.name,
    arguments: parsed,
  };
  return JSON.stringify(value);
}

/**
 * The `mcp_approval_response` for the approval call's result: approved when the call succeeded and its data
 * does not say `approve: false`; a declined or failed call, or `approve: false`, is a refusal with its reason.
 */
export function approvalResponse(approvalRequestId: string, result: ToolResult): JsonObject {
  const data = isObject(result.data) ? result.data : undefined;
  const approve = result.status === 'success' && data?.approve !== false;
  const reason =
    typeof data?.reason === 'string' && data.reason !== ''
      ? data.reason
      : result.status === 'error'
        ? (result.message ?? 'The approval call failed.')
        : undefined;
  return {
    type: 'mcp_approval_response',
    approval_request_id: approvalRequestId,
    approve,
    ...(reason === undefined || approve ? {} : { reason }),
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
