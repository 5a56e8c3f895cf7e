import type { StopReason, Usage } from '@lunation/contract';
import type { HttpResponseScript } from './scripted-server.js';

/** One thing the scripted model produces, in the order it produces it. */
export type ScriptedEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  /** Closes the current reasoning block with the provider's signature. */
  | { type: 'reasoning-signature'; signature: string }
  /** A whole redacted reasoning block; `data` is the opaque payload. */
  | { type: 'redacted-reasoning'; data: string }
  | { type: 'tool-call-start'; toolCallId: string; toolName: string }
  /** A piece of a call's JSON arguments; pieces of parallel calls may interleave. */
  | { type: 'tool-call-delta'; toolCallId: string; argumentsDelta: string }
  /** A piece of a refusal: the model declines (needs `capabilities.refusal`). */
  | { type: 'refusal'; text: string };

/** A vendor-neutral 200 streaming response. */
export interface ScriptedStream {
  type: 'stream';
  events: readonly ScriptedEvent[];
  /** The usage the adapter must report; the wire expresses it in the vendor's fields. Zero when absent. */
  usage?: Usage;
  /** @default 'tool-use' when the events hold a tool call, 'refusal' when they hold a refusal, otherwise 'end-turn' */
  stopReason?: StopReason;
  /**
   * `complete` sends the vendor's closing events; the others stop right after `events`, inside the last
   * content block (which is not closed) and without the closing events: `close` ends the HTTP response
   * cleanly, `reset` destroys the connection, `hang` keeps it open.
   * @default 'complete'
   */
  ending?: 'complete' | 'close' | 'reset' | 'hang';
  /** Pause before each event, so the client receives them as separate reads. */
  delayMs?: number;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

/** A vendor-neutral HTTP error response. */
export interface ScriptedError {
  type: 'error';
  status: number;
  /** Extra response headers, e.g. `retry-after`. */
  headers?: Record<string, string>;
  /** The error message; the wire uses a vendor-realistic one when absent. */
  message?: string;
  /** The body says that the prompt does not fit the model's context window. */
  contextOverflow?: boolean;
}

/** What the suite asks the server to answer: a stream of events or an error. */
export type ScriptedResponse = ScriptedStream | ScriptedError;

/** What the vendor's wire format can express; conformance scenarios adapt their expectations to it. */
export interface WireCapabilities {
  /** Reasoning text is streamed. */
  reasoning: boolean;
  /** Reasoning blocks carry a signature. */
  reasoningSignature: boolean;
  /** Redacted reasoning blocks exist. */
  redactedReasoning: boolean;
  /** Argument pieces of parallel tool calls can arrive interleaved (otherwise the wire sends calls one by one). */
  interleavedToolCalls: boolean;
  /**
   * The model's refusal reaches the adapter as text (a refusal field, or the explanation of a refusal stop
   * reason); the adapter must report it as `refusal-delta` parts and stop reason `refusal`.
   * @default false
   */
  refusal?: boolean;
  /** The stop reasons the wire can express unambiguously. */
  stopReasons: readonly StopReason[];
  /**
   * How tool-call arguments arrive: in pieces (`streamed`), or each call whole in one event (`whole`, e.g.
   * Ollama's NDJSON `/api/chat`, whose arguments are a JSON object the adapter serialises). With `whole`, the
   * suite expects one argument piece per call and compares arguments as parsed JSON; calls cannot interleave.
   * @default 'streamed'
   */
  toolCallArguments?: 'streamed' | 'whole';
  /**
   * Usage fields the vendor's wire has no field for (e.g. no cache or reasoning counts). The adapter must report
   * 0 for them: the suite still scripts non-zero values, so an adapter that reads a field the wire does carry
   * (or invents one) fails, and so does one that drops a field not listed here.
   * @default []
   */
  unreportedUsage?: readonly UnreportedUsageField[];
}

/** A usage field a wire may lack. */
export type UnreportedUsageField = 'cacheReadTokens' | 'cacheWriteTokens' | 'reasoningTokens';

/** The usage an adapter on this wire must report for `usage`: fields the wire lacks are 0. */
export function reportableUsage(usage: Usage, capabilities: WireCapabilities): Usage {
  const reported = { ...usage };
  for (const field of capabilities.unreportedUsage ?? []) reported[field] = 0;
  return reported;
}

/** An adapter's encoder from vendor-neutral scripted responses to the vendor's HTTP responses. */
export interface ProviderWire {
  /** The vendor's exact HTTP response for a scripted response. */
  encode(response: ScriptedResponse): HttpResponseScript;
  capabilities: WireCapabilities;
}

/** One server-sent event, framed as `event: <name>\ndata: <json>\n\n` (no `event:` line when `event` is absent). */
export function formatServerSentEvent(data: unknown, event?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${payload}\n\n`;
}

/** The stop reason a scripted stream ends with. */
export function scriptedStopReason(stream: ScriptedStream): StopReason {
  if (stream.stopReason !== undefined) return stream.stopReason;
  if (stream.events.some((event) => event.type === 'tool-call-start')) return 'tool-use';
  return stream.events.some((event) => event.type === 'refusal') ? 'refusal' : 'end-turn';
}
