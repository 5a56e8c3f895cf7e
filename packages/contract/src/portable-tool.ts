import { z } from 'zod';
import type { JsonSchema, JsonValue } from './json.js';
import type { ResumeDecision, RunIdentity } from './run.js';
import type { ToolDescriptor, ToolResult } from './tools.js';

/**
 * Hints about what a tool does (as MCP's tool annotations): usable in permission rules, never sent to the
 * model. A hint is a claim of the tool's author, not a guarantee.
 */
export const toolAnnotationsSchema = z.object({
  /** A human-readable title. */
  title: z.string().optional(),
  /** The tool does not change its environment. */
  readOnlyHint: z.boolean().optional(),
  /** The tool may destroy or overwrite (meaningful when not read-only). */
  destructiveHint: z.boolean().optional(),
  /** Calling it again with the same arguments has no further effect. */
  idempotentHint: z.boolean().optional(),
  /** The tool reaches an open world (the web, other people), not a closed domain. */
  openWorldHint: z.boolean().optional(),
});
/** Hints about what a tool does; see {@link toolAnnotationsSchema}. */
export type ToolAnnotations = z.infer<typeof toolAnnotationsSchema>;

/** What a portable tool fills in to suspend its call until a decision arrives (the runtime adds ids). */
export interface PortableTicket {
  /** What is asked, e.g. `approve` or `mcp-input`. @default 'approve' */
  action?: string;
  message: string;
  parameters?: JsonValue;
  /** JSON Schema the decision's payload must satisfy. */
  responseSchema?: JsonSchema;
  /** @default 'replay-tool-call' */
  resumeMode?: 'replay-tool-call' | 'use-decision-as-result' | 'pass-decision-to-tool';
}

/**
 * What a portable tool may use while it runs: the runtime's tool context has all of it (and more), so an
 * adapter package needs only the contract.
 */
export interface PortableToolContext {
  readonly toolCallId: string;
  readonly toolName: string;
  readonly identity: RunIdentity;
  /** Aborted when the call times out or the run is cancelled. */
  readonly signal: AbortSignal;
  /** Stable for this tool call across re-runs after a crash: send it to external systems. */
  readonly idempotencyKey: string;
  /** True when an earlier attempt of this call died mid-way. */
  readonly rerun: boolean;
  /** The decision that resumed this call, if one did. */
  readonly decision: ResumeDecision | undefined;
  /** Reports progress to the run's event stream. */
  reportProgress(progress: JsonValue): void;
  /** An output that suspends this call until a decision arrives; return it from `execute`. */
  suspend(ticket: PortableTicket): unknown;
  /** An output carrying a full tool result (e.g. an error the model should see); return it from `execute`. */
  output(result: ToolResult): unknown;
}

/**
 * A tool made against the contract alone (by an adapter such as `@lunation/mcp`): its input is checked by
 * its JSON Schema where it runs, not by a zod schema. The runtime takes it wherever it takes a tool.
 */
export interface PortableTool {
  readonly descriptor: ToolDescriptor;
  /** Always undefined: a portable tool validates its own input. */
  readonly inputSchema: undefined;
  /** Milliseconds a call may run before it times out; 0 disables. */
  readonly timeoutMs?: number;
  readonly annotations?: ToolAnnotations;
  /** Returns the data of a success result, or an output from `context.suspend` / `context.output`. */
  execute(input: unknown, context: PortableToolContext): unknown | Promise<unknown>;
}
