import { setTimeout as sleep } from 'node:timers/promises';
import {
  LunationError,
  type Message,
  type ModelCallOptions,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
  messageText,
  type ToolResultPart,
} from '@lunation/contract';

export interface DemoModelOptions {
  /** Pause between streamed tokens, so the reply visibly streams. @default 15 */
  tokenDelayMs?: number;
}

interface DemoTurn {
  text: string;
  toolCall?: { toolName: string; arguments: Record<string, unknown> };
}

const CITY_TIME_ZONES: Record<string, string> = {
  berlin: 'Europe/Berlin',
  london: 'Europe/London',
  'new york': 'America/New_York',
  paris: 'Europe/Paris',
  'san francisco': 'America/Los_Angeles',
  sydney: 'Australia/Sydney',
  tokyo: 'Asia/Tokyo',
};

const HELP =
  'I am the offline demo model, so I only know a few tricks. Try "what is 12 * (3 + 4)", ' +
  '"what time is it in Tokyo", "read README.md", "list the files", "run the slow task" or ' +
  '"call <tool> {json arguments}" (an MCP server\'s tool, say). ' +
  'Set OPENAI_API_KEY or ANTHROPIC_API_KEY to talk to a real model.';

/**
 * A deterministic, offline ModelProvider for the sample app. It recognises a few requests by keywords and
 * calls the matching tool; a greeting (or the first message of a thread) takes a short tour: the calculator,
 * then `read_file`, which asks for approval. Every answer is streamed word by word.
 */
export class DemoModel implements ModelProvider {
  readonly specificationVersion = 'v1';
  readonly provider = 'demo';
  readonly modelId = 'demo';
  private readonly tokenDelayMs: number;

  constructor(options: DemoModelOptions = {}) {
    this.tokenDelayMs = options.tokenDelayMs ?? 15;
  }

  async *stream(request: ModelRequest, options: ModelCallOptions = {}): AsyncGenerator<ModelStreamPart> {
    const { signal } = options;
    const turn = planTurn(request);
    let outputTokens = 0;
    for (const token of turn.text.match(/\S+\s*|\s+/g) ?? []) {
      if (this.tokenDelayMs > 0) await sleep(this.tokenDelayMs, undefined, { signal }).catch(rethrowAbort);
      checkAbort(signal);
      yield { type: 'text-delta', delta: token };
      outputTokens++;
    }
    if (turn.toolCall) {
      const toolCallId = `demo_call_${request.messages.length}`;
      const { toolName } = turn.toolCall;
      const args = JSON.stringify(turn.toolCall.arguments);
      yield { type: 'tool-call-start', toolCallId, toolName };
      yield { type: 'tool-call-delta', toolCallId, argumentsDelta: args };
      yield { type: 'tool-call-end', toolCallId, toolName, arguments: args };
      outputTokens += Math.ceil(args.length / 4);
    }
    const inputChars = request.messages.reduce((sum, message) => sum + JSON.stringify(message).length, 0);
    yield {
      type: 'usage',
      usage: {
        inputTokens: Math.ceil(inputChars / 4),
        outputTokens,
        cacheReadTokens: 0,
        cacheWriteTokens: 0,
        reasoningTokens: 0,
      },
    };
    yield { type: 'finish', stopReason: turn.toolCall ? 'tool-use' : 'end-turn' };
  }
}

/** What to answer, from the last user message and the tool results that followed it. */
function planTurn(request: ModelRequest): DemoTurn {
  const { messages } = request;
  const userIndex = messages.findLastIndex((message) => message.role === 'user');
  const userMessage = messages[userIndex];
  if (!userMessage) return { text: HELP };
  const text = messageText(userMessage).trim();
  const isFirstMessage = messages.filter((message) => message.role === 'user').length === 1;
  const results = messages.slice(userIndex + 1).flatMap(toolResultsOf);
  const latest = results.at(-1);
  const call = (toolName: string, args: Record<string, unknown>, say: string): DemoTurn =>
    request.tools.some((tool) => tool.name === toolName)
      ? { text: say, toolCall: { toolName, arguments: args } }
      : { text: `${say}Oh, the tool "${toolName}" is not available here. ${HELP}` };

  const intent = intentOf(text, isFirstMessage);
  if (intent.type === 'tour') {
    if (!latest) {
      return call(
        'calculator',
        { expression: '(2 + 3) * 7' },
        'Hello! I am the offline demo model of the Lunation assistant. First, a tool call: ',
      );
    }
    if (results.length === 1) {
      return call(
        'read_file',
        { path: 'README.md' },
        `${describeResult(latest)} Next I would like to read README.md in the sandbox, which needs your approval. `,
      );
    }
    return { text: `${describeResult(latest)}\n\n${HELP}` };
  }
  if (latest) return { text: describeResult(latest) };
  switch (intent.type) {
    case 'calculate':
      return call('calculator', { expression: intent.expression }, `Let me calculate ${intent.expression}. `);
    case 'time':
      return call(
        'current_time',
        intent.timeZone ? { timeZone: intent.timeZone } : {},
        'Let me look at the clock. ',
      );
    case 'read':
      return call(
        'read_file',
        { path: intent.path },
        intent.path === '.' ? 'Let me list the sandbox. ' : `Let me read ${intent.path}. `,
      );
    case 'slow':
      return call('slow_task', { steps: intent.steps }, 'Starting the slow task; watch the progress. ');
    case 'call': {
      let args: unknown;
      try {
        args = JSON.parse(intent.arguments);
      } catch {
        return { text: `Those arguments are not JSON: ${intent.arguments}` };
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        return { text: `The arguments must be a JSON object, like {"message": "hi"}.` };
      }
      return call(intent.toolName, args as Record<string, unknown>, `Calling ${intent.toolName}. `);
    }
    default:
      return { text: HELP };
  }
}

type Intent =
  | { type: 'tour' }
  | { type: 'calculate'; expression: string }
  | { type: 'time'; timeZone: string | undefined }
  | { type: 'read'; path: string }
  | { type: 'slow'; steps: number }
  | { type: 'call'; toolName: string; arguments: string }
  | { type: 'help' };

function intentOf(text: string, isFirstMessage: boolean): Intent {
  // "call <tool> {json}": any tool by name (an MCP server's, say), with the arguments as given.
  const named = /^(?:call|use)\s+([A-Za-z0-9_.-]+)\s*(\{[\s\S]*\})?\s*$/i.exec(text);
  if (named) return { type: 'call', toolName: named[1]!, arguments: named[2] ?? '{}' };
  const lower = text.toLowerCase();
  if (/^(hello|hi|hey|good (morning|afternoon|evening)|tour|demo)\b/.test(lower)) return { type: 'tour' };
  const expression = findExpression(text);
  if (expression) return { type: 'calculate', expression };
  if (/\b(time|clock|date|day)\b/.test(lower)) return { type: 'time', timeZone: findTimeZone(text) };
  if (/\b(list|ls|files)\b/.test(lower)) return { type: 'read', path: '.' };
  if (/\b(read|open|show|cat)\b/.test(lower)) {
    const path = text
      .split(/\s+/)
      .map((word) => word.replace(/^["'`(]+|["'`),;:!?]+$/g, ''))
      .find((word) => /[./]/.test(word) && word.length > 1);
    return { type: 'read', path: path ?? 'README.md' };
  }
  if (/\b(slow|long|progress|task|job|build)\b/.test(lower)) {
    const steps = Number(lower.match(/\b(\d{1,2}) steps?\b/)?.[1] ?? 5);
    return { type: 'slow', steps: Math.min(Math.max(steps, 1), 20) };
  }
  return isFirstMessage ? { type: 'tour' } : { type: 'help' };
}

function toolResultsOf(message: Message): ToolResultPart[] {
  return message.role === 'tool' ? message.content : [];
}

/** One sentence about a tool result. */
function describeResult(part: ToolResultPart): string {
  const { result } = part;
  if (result.status === 'error') {
    return result.metadata?.declined === true
      ? 'All right, I will not do that.'
      : `That did not work: ${result.message ?? 'the tool failed'}.`;
  }
  const data = (result.data ?? {}) as Record<string, unknown>;
  switch (part.toolName) {
    case 'calculator':
      return `${data.expression} = ${data.result}.`;
    case 'current_time':
      return `It is ${data.weekday}, ${data.localTime} in ${data.timeZone} (${data.utcOffset}).`;
    case 'read_file':
      if (Array.isArray(data.entries)) return `The folder "${data.path}" holds: ${data.entries.join(', ')}.`;
      return `Here is ${data.path}${data.truncated ? ' (cut short)' : ''}:\n\n${String(data.content).trim()}`;
    case 'slow_task':
      return `The slow task is done: ${data.message}`;
    default:
      return `The tool "${part.toolName}" answered: ${JSON.stringify(result.data ?? result.message ?? '')}.`;
  }
}

/** The longest run of arithmetic in the text, if it contains an operator or a function. */
function findExpression(text: string): string | undefined {
  const candidates =
    text.match(/(?:sqrt|abs|round|floor|ceil|ln|log|sin|cos|tan|pi|[\d\s.+\-*/%^()×÷])+/gi) ?? [];
  const expressions = candidates
    .map((candidate) => candidate.trim().replace(/^[^\d(a-z-]+|[^\d)a-z]+$/gi, ''))
    .filter((candidate) => /\d/.test(candidate) && /[-+*/%^×÷]|[a-z]+\(/i.test(candidate));
  return expressions.sort((a, b) => b.length - a.length)[0];
}

function findTimeZone(text: string): string | undefined {
  const iana = text.match(/\b[A-Z][A-Za-z_]+\/[A-Z][A-Za-z_]+(?:\/[A-Z][A-Za-z_]+)?\b/)?.[0];
  if (iana) return iana;
  const lower = text.toLowerCase();
  return Object.entries(CITY_TIME_ZONES).find(([city]) => lower.includes(city))?.[1];
}

function checkAbort(signal: AbortSignal | undefined): void {
  if (signal?.aborted) {
    throw new LunationError('cancelled', 'The demo model call was aborted', { cause: signal.reason });
  }
}

function rethrowAbort(error: unknown): never {
  throw new LunationError('cancelled', 'The demo model call was aborted', { cause: error });
}
