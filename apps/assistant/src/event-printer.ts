import type { Writable } from 'node:stream';
import { styleText } from 'node:util';
import {
  type AgentEvent,
  type JsonValue,
  type Message,
  type SuspensionTicket,
  type ToolResult,
  toolResultText,
} from '@lunation/contract';

type Style = 'cyan' | 'dim' | 'red' | 'yellow' | 'bold';

export interface EventPrinterOptions {
  output: Writable;
  /** Use ANSI colours. */
  color: boolean;
  /**
   * A terminal: redraw the progress line in place instead of printing one line per update, and show a
   * `thinking…` spinner while the model has not answered yet.
   */
  live: boolean;
  /** Time between spinner frames. @default 100 */
  spinnerFrameMs?: number;
}

const SPINNER_FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/** The text after the spinner frame. */
export const THINKING = 'thinking…';

/** Prints a run's events as a chat transcript: streamed text, tool calls and results, progress, errors. */
export class EventPrinter {
  private readonly output: Writable;
  private readonly color: boolean;
  private readonly live: boolean;
  private atLineStart = true;
  private speaking = false;
  private progressShown = false;
  private lastError: string | undefined;
  private readonly spinnerFrameMs: number;
  private spinner: NodeJS.Timeout | undefined;
  /** The arguments of calls made before this process started, by call id (a re-run shows them). */
  private readonly earlierCalls = new Map<string, string>();

  constructor(options: EventPrinterOptions) {
    this.output = options.output;
    this.color = options.color;
    this.live = options.live;
    this.spinnerFrameMs = options.spinnerFrameMs ?? 100;
  }

  style(style: Style, text: string): string {
    return this.color ? styleText(style, text) : text;
  }

  print(event: AgentEvent): void {
    switch (event.type) {
      case 'step-start':
        this.speaking = false;
        this.startThinking();
        break;
      case 'text-delta':
        this.stopThinking();
        if (!this.speaking) {
          this.line('');
          this.write(this.style('cyan', 'assistant> '));
          this.speaking = true;
        }
        this.write(event.delta);
        break;
      case 'tool-call-end':
        this.line(this.style('dim', `  → ${event.toolName} ${event.arguments}`));
        break;
      case 'tool-execution-start':
        if (event.rerun) {
          // A call cut off by a crash or a kill runs again: say so, since its `→` line was printed long ago.
          const args = this.earlierCalls.get(event.toolCallId);
          this.line(
            this.style(
              'yellow',
              `  ↻ ${event.toolName}${args === undefined ? '' : ` ${args}`} (interrupted; running it again)`,
            ),
          );
        }
        break;
      case 'tool-progress':
        this.stopThinking();
        this.progress(`  … ${event.toolName} ${describeProgress(event.progress)}`);
        break;
      case 'tool-result': {
        const text = summarize(event.result);
        if (event.result.status === 'error') this.line(this.style('red', `  ✗ ${event.toolName}: ${text}`));
        else this.line(this.style('dim', `  ← ${event.toolName}: ${text}`));
        break;
      }
      case 'error':
        this.lastError = event.error.message;
        this.line(this.style('red', `  ! ${event.error.message}`));
        break;
      case 'run-end':
        this.runEnd(event);
        break;
    }
  }

  /** Remembers the calls of earlier messages, so a call re-run after a crash is shown with its arguments. */
  rememberCalls(messages: readonly Message[]): void {
    for (const message of messages) {
      if (message.role !== 'assistant') continue;
      for (const part of message.content) {
        if (part.type === 'tool-call') this.earlierCalls.set(part.toolCallId, part.arguments);
      }
    }
  }

  /** Prints a ticket before asking the user about it. */
  printTicket(ticket: SuspensionTicket): void {
    this.line(this.style('yellow', `  ? ${ticket.message} ${ticket.toolName} ${ticket.arguments}`));
  }

  /** Prints a line of its own (ending any streamed text first). */
  line(text: string): void {
    this.stopThinking();
    this.clearProgress();
    if (!this.atLineStart) this.write('\n');
    this.speaking = false;
    if (text !== '') this.write(`${text}\n`);
  }

  private runEnd(event: Extract<AgentEvent, { type: 'run-end' }>): void {
    const { termination } = event;
    if (termination.type === 'error' && termination.error.message !== this.lastError) {
      this.line(this.style('red', `  ! ${termination.error.message}`));
    } else if (termination.type === 'cancelled') {
      this.line(this.style('dim', `  (cancelled${termination.reason ? `: ${termination.reason}` : ''})`));
    } else if (termination.type === 'stopped') {
      this.line(this.style('dim', `  (stopped: ${termination.code})`));
    } else if (termination.type === 'blocked') {
      this.line(this.style('dim', `  (blocked: ${termination.reason})`));
    } else {
      this.line('');
    }
    this.lastError = undefined;
  }

  /** On a terminal, a spinner line until the model's first output (any printed line removes it). */
  private startThinking(): void {
    if (!this.live || this.spinner) return;
    let frame = 0;
    const draw = () => {
      this.progress(`${SPINNER_FRAMES[frame % SPINNER_FRAMES.length]} ${THINKING}`);
      frame++;
    };
    draw();
    this.spinner = setInterval(draw, this.spinnerFrameMs);
    this.spinner.unref();
  }

  /** Removes the spinner, if shown. */
  stopThinking(): void {
    if (!this.spinner) return;
    clearInterval(this.spinner);
    this.spinner = undefined;
    this.clearProgress();
  }

  private progress(text: string): void {
    if (!this.live) {
      this.line(this.style('dim', text));
      return;
    }
    if (!this.atLineStart && !this.progressShown) this.write('\n');
    this.write(`\r\x1b[K${this.style('dim', text)}`);
    this.progressShown = true;
    this.atLineStart = false;
  }

  private clearProgress(): void {
    if (!this.progressShown) return;
    this.write('\r\x1b[K');
    this.progressShown = false;
    this.atLineStart = true;
  }

  private write(text: string): void {
    if (text === '') return;
    this.output.write(text);
    this.atLineStart = text.endsWith('\n');
  }
}

/** `[###---] 3/5 step 3 of 5` for `{ done, total, message }`, else the JSON. */
function describeProgress(progress: JsonValue): string {
  if (typeof progress !== 'object' || progress === null || Array.isArray(progress)) {
    return JSON.stringify(progress);
  }
  const { done, total, message } = progress;
  const parts: string[] = [];
  if (typeof done === 'number' && typeof total === 'number' && total > 0) {
    const filled = Math.round((Math.min(done, total) / total) * 10);
    parts.push(`[${'#'.repeat(filled)}${'-'.repeat(10 - filled)}] ${done}/${total}`);
  }
  if (typeof message === 'string') parts.push(message);
  return parts.length > 0 ? parts.join(' ') : JSON.stringify(progress);
}

/** A short line about a result: `key: value` pairs for an object, long strings cut with their length. */
function summarize(result: ToolResult): string {
  const { data } = result;
  if (result.message !== undefined || typeof data !== 'object' || data === null || Array.isArray(data)) {
    return oneLine(toolResultText(result));
  }
  const short = (value: JsonValue): string => {
    if (typeof value === 'string') {
      return value.length > 40 ? `${JSON.stringify(oneLine(value, 40))} (${value.length} characters)` : value;
    }
    if (Array.isArray(value))
      return oneLine(
        value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join(', '),
        60,
      );
    return JSON.stringify(value);
  };
  return oneLine(
    Object.entries(data)
      .map(([key, value]) => `${key}: ${short(value)}`)
      .join(', '),
    200,
  );
}

function oneLine(text: string, max = 160): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
