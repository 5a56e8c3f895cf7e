import type {
  AgentEvent,
  Message,
  ResumeDecision,
  RunIdentity,
  RunOrigin,
  SuspensionTicket,
  Usage,
  UserMessage,
} from '@lunation/contract';
import type { z } from 'zod';
import type { TaskRecord } from '../background-tasks.js';
import type { EventStream } from '../event-stream.js';
import { createId } from '../id.js';
import type { FrontendTool, RunResult } from '../loop/run-scope.js';

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

/** What {@link AgentRuntime.sendDecisions} takes beside the id and the decisions. */
export interface SendDecisionsOptions {
  /** The caller's owner (tenant / user id): a thread of another owner is `not-found`, as for `run()`. */
  resourceId?: string;
}

/** What {@link AgentRuntime.sendDecisions} resolves with. */
export interface DecisionOutcome {
  /** Decision ids applied now. */
  applied: string[];
  /** Decision ids ignored because they were applied before. */
  ignored: string[];
  /** Tickets still waiting for a decision. */
  openTickets: SuspensionTicket[];
  /** The resumed run, once every ticket is decided. */
  run?: RunHandle;
}

/** @internal The messages of a run input; a text becomes a user message with a new id. */
export function normaliseInput(input: RunInput | undefined): Message[] {
  if (input === undefined) return [];
  if (typeof input === 'string') {
    const message: UserMessage = { id: createId(), role: 'user', content: [{ type: 'text', text: input }] };
    return [message];
  }
  return Array.isArray(input) ? input : [input];
}
