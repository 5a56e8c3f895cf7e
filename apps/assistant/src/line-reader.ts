import { createInterface, type Interface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/**
 * Reads lines one prompt at a time, from a terminal or a pipe. Lines that arrive early are queued, so piped
 * input (`printf 'hello\ny\n' | ...`) is consumed in order. Piped lines are echoed after their prompt to keep
 * the transcript readable.
 */
export class LineReader {
  private readonly readline: Interface;
  private readonly lines: AsyncIterator<string>;
  private readonly terminal: boolean;

  constructor(
    input: Readable & { isTTY?: boolean },
    private readonly output: Writable,
  ) {
    this.terminal = input.isTTY === true;
    this.readline = createInterface({ input, ...(this.terminal ? { output, terminal: true } : {}) });
    this.lines = this.readline[Symbol.asyncIterator]();
  }

  /** Shows the prompt and resolves with the next line, or undefined at the end of the input. */
  async read(prompt: string): Promise<string | undefined> {
    if (this.terminal) {
      this.readline.setPrompt(prompt);
      this.readline.prompt();
    } else {
      this.output.write(prompt);
    }
    const next = await this.lines.next();
    if (next.done) {
      this.output.write('\n');
      return undefined;
    }
    if (!this.terminal) this.output.write(`${next.value}\n`);
    return next.value;
  }

  /** Calls `listener` on Ctrl-C while the terminal is in raw mode (elsewhere SIGINT reaches the process). */
  onInterrupt(listener: () => void): void {
    this.readline.on('SIGINT', listener);
  }

  close(): void {
    this.readline.close();
  }
}
