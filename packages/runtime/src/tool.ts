import type {
  InterruptPolicy,
  JsonSchema,
  JsonValue,
  ResumeDecision,
  RunIdentity,
  ToolAnnotations,
  ToolDescriptor,
  ToolResult,
} from '@lunation/contract';
import { z } from 'zod';
import type { BackgroundTasks } from './background-tasks.js';
import type { Command } from './command.js';
import type { StateSnapshot } from './state.js';

/** What a tool, gate or hook fills in to suspend a call; the runtime adds ids and the call. */
export interface TicketInput {
  /** @default 'approve' */
  action?: string;
  message: string;
  parameters?: JsonValue;
  /** The decision payload must satisfy this (a zod schema or a JSON Schema). */
  responseSchema?: z.ZodType | JsonSchema;
  /** @default 'replay-tool-call' */
  resumeMode?: 'replay-tool-call' | 'use-decision-as-result' | 'pass-decision-to-tool';
}

const outputMarker = Symbol.for('lunation.tool-output');

/** A tool's full output: a result, and optionally a state command or a suspension. */
export class ToolOutput {
  readonly [outputMarker] = true;
  constructor(
    readonly result: ToolResult,
    readonly command?: Command,
    readonly suspend?: TicketInput,
  ) {}

  /** True for any ToolOutput, even one made by another copy of this package. */
  static isInstance(value: unknown): value is ToolOutput {
    return (
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[outputMarker] === true
    );
  }
}

/** Everything a running tool may use. */
export interface ToolContext {
  /** The provider's id of this call (unique within its answer only; providers may reuse ids later). */
  readonly toolCallId: string;
  /** The runtime's id of this call, unique in the thread. */
  readonly callId: string;
  readonly toolName: string;
  readonly identity: RunIdentity;
  readonly state: StateSnapshot;
  readonly signal: AbortSignal;
  /** Stable for this tool call across re-runs after a crash: use it for external idempotency. */
  readonly idempotencyKey: string;
  /** True when an earlier attempt of this call died mid-way. */
  readonly rerun: boolean;
  /**
   * The fencing token of the thread lease this call runs under: strictly increasing per thread across every
   * acquisition, so a process that took the thread over has a higher one. Undefined when the runtime holds no
   * lease (no store). A system that remembers the highest token it has seen (per thread or per resource) and
   * refuses lower ones makes a stalled process's late effect harmless; `idempotencyKey` dedupes re-runs.
   */
  readonly fencingToken: number | undefined;
  /** The decision that resumed this call (`pass-decision-to-tool` / `replay-tool-call`). */
  readonly decision: ResumeDecision | undefined;
  /** Starts work that outlives this call; its result reaches the run at a later step. */
  readonly background: BackgroundTasks;
  /** Reports progress to the run's event stream. */
  reportProgress(progress: JsonValue): void;
  /**
   * Runs `effect` in a transaction on the store's own database (a kysely `Transaction` with `SqliteStore` and
   * `PostgresStore`) that commits together with this call's ledger completion: the effect happens exactly once
   * whatever instant the process dies. What `effect` returns (JSON) becomes the call's result data, whatever the
   * tool returns afterwards. When an earlier attempt already committed, `effect` does not run and its recorded
   * data is returned. One transaction per call. Stores without transactions (memory, Redis, none) throw
   * `unsupported`.
   */
  transaction<Result, Transaction = unknown>(
    effect: (transaction: Transaction) => Promise<Result>,
  ): Promise<Result>;
  /** Suspends this call until a decision arrives. */
  suspend(ticket: TicketInput): ToolOutput;
  /** A result with a state command. */
  output(result: ToolResult, command?: Command): ToolOutput;
}

/** A tool: a descriptor for the model, an input schema, and `execute`. */
export interface Tool<Input = unknown> {
  readonly descriptor: ToolDescriptor;
  readonly inputSchema: z.ZodType<Input> | undefined;
  /** Milliseconds a call may run before it times out (overrides the agent's `toolExecution.timeoutMs`). */
  readonly timeoutMs?: number;
  /** Hints about what the tool does (read-only, destructive, ...); permission rules can match them. */
  readonly annotations?: ToolAnnotations;
  /** What recovery does with a call found started but not finished (overrides the agent's `interruptPolicy`). */
  readonly interruptPolicy?: InterruptPolicy;
  /** Returns the data for a success result, or a ToolOutput. Throwing yields an error result. */
  execute(input: Input, context: ToolContext): unknown | Promise<unknown>;
}

/** A tool of any input type. */
// biome-ignore lint/suspicious/noExplicitAny: a tool of any input type
export type AnyTool = Tool<any>;

/** What {@link defineTool} takes. */
export interface ToolDefinition<Schema extends z.ZodType> {
  name: string;
  description: string;
  input: Schema;
  /** Milliseconds a call may run before it times out; 0 disables. @default the agent's `toolExecution.timeoutMs` */
  timeoutMs?: number;
  /** Hints about what the tool does; permission rules can match them. */
  annotations?: ToolAnnotations;
  /**
   * What recovery does with a call found started but not finished after a crash: `rerun` (same idempotency
   * key, `rerun: true`), `fail` (never again: an error result) or `ask` (an `interrupted-call` ticket).
   * @default the agent's `interruptPolicy` ('rerun')
   */
  interruptPolicy?: InterruptPolicy;
  /** Runs the tool with validated input; returns the result's data or a ToolOutput. */
  execute(input: z.infer<Schema>, context: ToolContext): unknown | Promise<unknown>;
}

/**
 * Defines a tool from a zod input schema. Its JSON Schema is derived once per schema object: tools defined again
 * with the same schema (one per worker, per request) reuse it.
 */
export function defineTool<Schema extends z.ZodType>(
  definition: ToolDefinition<Schema>,
): Tool<z.infer<Schema>> {
  const parameters = convertOnce(inputSchemas, definition.input, 'input');
  return {
    descriptor: { name: definition.name, description: definition.description, parameters },
    inputSchema: definition.input as z.ZodType<z.infer<Schema>>,
    execute: definition.execute,
    ...(definition.timeoutMs === undefined ? {} : { timeoutMs: definition.timeoutMs }),
    ...(definition.annotations === undefined ? {} : { annotations: definition.annotations }),
    ...(definition.interruptPolicy === undefined ? {} : { interruptPolicy: definition.interruptPolicy }),
  };
}

/** Converts a response schema given as zod or JSON Schema to JSON Schema. */
export function toJsonSchema(schema: z.ZodType | JsonSchema): JsonSchema {
  return schema instanceof z.ZodType ? convertOnce(outputSchemas, schema, 'output') : schema;
}

/** The JSON Schemas derived so far, by zod schema object (a schema is immutable once made). */
const inputSchemas = new WeakMap<z.ZodType, JsonSchema>();
const outputSchemas = new WeakMap<z.ZodType, JsonSchema>();

/** `schema` as draft-7 JSON Schema (of its input or output side): converted on first use, a fresh copy each time. */
function convertOnce(
  cache: WeakMap<z.ZodType, JsonSchema>,
  schema: z.ZodType,
  io: 'input' | 'output',
): JsonSchema {
  let json = cache.get(schema);
  if (json === undefined) {
    json = z.toJSONSchema(schema, { target: 'draft-7', io }) as JsonSchema;
    delete json.$schema;
    cache.set(schema, json);
  }
  return JSON.parse(JSON.stringify(json)) as JsonSchema;
}

/** The zod schemas made from JSON Schemas so far, by their JSON text; the oldest go past {@link maxValidators}. */
const validators = new Map<string, z.ZodType>();
const maxValidators = 256;

/**
 * A zod schema checking values against a JSON Schema (a ticket's stored `responseSchema`): made once per distinct
 * schema and reused, as building one costs far more than a parse.
 */
export function jsonSchemaValidator(schema: JsonSchema): z.ZodType {
  const key = JSON.stringify(schema);
  let validator = validators.get(key);
  if (validator === undefined) {
    validator = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    if (validators.size >= maxValidators) validators.delete(validators.keys().next().value as string);
    validators.set(key, validator);
  }
  return validator;
}

/**
 * Formats zod issues as `path: message; ...` for the model and for errors. A value that matches no branch of a
 * union is described by the branch it came closest to (`always: Invalid input: expected boolean, received
 * string`), or by the types it could have had. `root` names the value itself. @default '(root)'
 */
export function formatIssues(error: z.ZodError, root = '(root)'): string {
  return describeIssues(error.issues, [], root).join('; ');
}

type Issue = z.core.$ZodIssue;

function describeIssues(issues: readonly Issue[], prefix: PropertyKey[], root: string): string[] {
  return issues.flatMap((issue) => {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_union' && issue.errors.length > 0) {
      // A branch that failed inside the value (not on its type) is the one the caller meant.
      const closest = issue.errors.find(
        (branch) =>
          branch.length > 0 &&
          !branch.every((inner) => inner.path.length === 0 && inner.code === 'invalid_type'),
      );
      if (closest) return describeIssues(closest, path, root);
      const expected = new Set<string>();
      let received: string | undefined;
      for (const inner of issue.errors.flat()) {
        if (inner.code !== 'invalid_type') continue;
        expected.add(inner.expected);
        received ??= /received (\w+)/.exec(inner.message)?.[1];
      }
      if (expected.size > 0) {
        const what = `expected one of: ${[...expected].join(', ')}${received ? `, received ${received}` : ''}`;
        return [`${pathText(path, root)}: ${what}`];
      }
    }
    return [`${pathText(path, root)}: ${issue.message}`];
  });
}

function pathText(path: readonly PropertyKey[], root: string): string {
  return path.length > 0 ? path.map(String).join('.') : root;
}
