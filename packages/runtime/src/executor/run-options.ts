import {
  type AgentEvent,
  type IdSource,
  LunationError,
  type Message,
  type ResumeDecision,
  type RunIdentity,
  type RunOrigin,
  resumeDecisionSchema,
  type SuspensionTicket,
  systemIds,
  type Usage,
  type UserMessage,
} from '@lunation/contract';
import type { z } from 'zod';
import type { TaskRecord } from '../background-tasks.js';
import type { EventStream } from '../event-stream.js';
import type { FrontendTool, RunResult } from '../loop/run-scope.js';
import { MAX_JSON_DEPTH } from '../loop/storable.js';

/** Input of a run: a text, a message, or several messages. */
export type RunInput = string | Message | Message[];

/** What {@link AgentRuntime.run} takes. */
export interface RunOptions {
  threadId: string;
  /** @default the thread's active agent, else the runtime's first agent */
  agentId?: string;
  input?: RunInput;
  /**
   * The id of the run this starts, when it starts one (a continued run keeps its own): lets whoever asked for
   * the run follow its events before it starts, e.g. through a dispatcher. @default a new id
   */
  runId?: string;
  /** Answers to the thread's open tickets. */
  decisions?: ResumeDecision[];
  signal?: AbortSignal;
  /** Owner of a new thread (tenant / user id). */
  resourceId?: string;
  /** Client-side tools for this run: the model sees them; a call suspends until the client answers. */
  frontendTools?: FrontendTool[];
  /** Buffer events for `handle.events`. Turn off when only the result matters. @default true */
  stream?: boolean;
  /** Extra sink for this run only. */
  onEvent?: (event: AgentEvent) => void;
  /** Keep the run open after each reply, waiting for input (see `session()`). @default false */
  keepAlive?: boolean;
  /** The run must end with a JSON value matching this schema (overrides the agent's `output`). */
  output?: z.ZodType;
  /**
   * @internal The thread must be in the store already (`not-found` otherwise), never created here: a fleet
   * worker's, whose fronts create threads, so a missing one was deleted and a late submission brings it back.
   */
  existingThread?: boolean;
  /** @internal child runs */
  parent?: { runId: string; toolCallId: string; origin: RunOrigin };
  /** @internal background task results to deliver */
  taskResults?: TaskRecord[];
  /** @internal */
  onTurnEnd?(turn: { finalText: string; steps: number; usage: Usage }): void;
}

/** A started run. */
export interface RunHandle {
  readonly runId: string;
  readonly threadId: string;
  readonly identity: RunIdentity;
  /** Every event of the run, replayable; ends after `run-end`. */
  readonly events: EventStream;
  readonly result: Promise<RunResult>;
  /** Cancels the run; it ends `cancelled` and is checkpointed. */
  cancel(reason?: string): void;
}

/**
 * What {@link AgentRuntime.sendDecisions} decides on: `{ threadId }` or `{ runId }`, or an id that may name
 * either (looked up as a run, then as a thread; an id naming both is refused). Naming which one it is saves the
 * lookups.
 */
export type DecisionTarget = string | { threadId: string } | { runId: string };

/** What {@link AgentRuntime.sendDecisions} takes beside the target and the decisions. */
export interface SendDecisionsOptions {
  /** The caller's owner (tenant / user id): a thread of another owner is `not-found`, as for `run()`. */
  resourceId?: string;
  /**
   * With `resourceId`: a thread without an owner is `not-found` too (by default any caller may decide on one,
   * as `run()` lets any caller run it). For apps whose unowned threads belong to one local user.
   * @default false
   */
  ownedOnly?: boolean;
  /** Cancels the run the decisions resume (it ends `cancelled` once they are recorded). */
  signal?: AbortSignal;
}

/** What {@link AgentRuntime.sendDecisions} resolves with. */
export interface DecisionOutcome {
  /** Decision ids applied now. */
  applied: string[];
  /** Decision ids ignored because they were applied before. */
  ignored: string[];
  /** Tickets still waiting for a decision. */
  openTickets: SuspensionTicket[];
  /**
   * The resumed run, once every ticket is decided; also when tickets stay open but the run did not wait again
   * (its lease was lost or its commit failed): then the decisions may not be recorded, and its result says how
   * it ended.
   */
  run?: RunHandle;
}

/** @internal The messages of a run input; a text becomes a user message with a new id. */
export function normaliseInput(input: RunInput | undefined, ids: IdSource = systemIds): Message[] {
  if (input === undefined) return [];
  if (typeof input === 'string') {
    const message: UserMessage = { id: ids.id(), role: 'user', content: [{ type: 'text', text: input }] };
    return [message];
  }
  return Array.isArray(input) ? input : [input];
}

/**
 * The door's check of a decision request (`sendDecisions`, `run({ decisions })`, a fleet submission), before anything else: each decision's shape (and a payload not
 * absurdly deep), and one decision per ticket (a repeated decision id is a retry, not a second decision).
 */
export function validateDecisionShapes(decisions: ResumeDecision[]): ResumeDecision[] {
  if (!Array.isArray(decisions)) throw new LunationError('decision-invalid', 'Decisions must be an array');
  for (const [index, decision] of decisions.entries()) {
    if (nestingDepth((decision as { payload?: unknown } | null)?.payload, 0) > MAX_JSON_DEPTH) {
      throw new LunationError(
        'decision-invalid',
        `Decision #${index}: the payload is nested deeper than ${MAX_JSON_DEPTH} levels`,
      );
    }
    const parsed = resumeDecisionSchema.safeParse(decision);
    if (!parsed.success) {
      throw new LunationError(
        'decision-invalid',
        `Decision #${index} is malformed: ${parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ')}`,
      );
    }
  }
  const deciding = new Map<string, { decisionId: string; index: number }>();
  for (const [index, { decisionId, ticketId }] of decisions.entries()) {
    const earlier = deciding.get(ticketId);
    if (earlier !== undefined && earlier.decisionId !== decisionId) {
      throw new LunationError(
        'decision-invalid',
        `Decisions #${earlier.index} and #${index} both decide ticket "${ticketId}"; send one decision per ticket`,
        { details: { ticketId, decisionIds: [earlier.decisionId, decisionId] } },
      );
    }
    deciding.set(ticketId, { decisionId, index });
  }
  return decisions;
}

function nestingDepth(value: unknown, depth: number): number {
  if (typeof value !== 'object' || value === null || depth > MAX_JSON_DEPTH) return depth;
  let deepest = depth + 1;
  try {
    for (const key in value) {
      deepest = Math.max(deepest, nestingDepth((value as Record<string, unknown>)[key], depth + 1));
    }
  } catch {
    return MAX_JSON_DEPTH + 1;
  }
  return deepest;
}
