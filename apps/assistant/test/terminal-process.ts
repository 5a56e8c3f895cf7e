import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { stripVTControlCharacters } from 'node:util';
import { APP_COMMAND, APP_DIR, appEnvironment } from './support.js';

const quote = (value: string) => `'${value.replace(/'/g, `'\\''`)}'`;

/**
 * The app in a child process whose standard input and output are a pseudo-terminal (util-linux `script`), as
 * when a person runs `pnpm start` in a terminal: readline is in terminal mode and the output is "live".
 */
export class TerminalProcess {
  readonly child: ChildProcessWithoutNullStreams;
  /** Everything written to the terminal, escape sequences included. */
  raw = '';
  readonly exited: Promise<number | null>;
  private readonly waiters = new Set<() => void>();

  constructor(args: string[], env: Record<string, string> = {}) {
    const command = [process.execPath, ...APP_COMMAND, ...args].map(quote).join(' ');
    this.child = spawn('script', ['--quiet', '--flush', '--return', '--command', command, '/dev/null'], {
      cwd: APP_DIR,
      env: { ...appEnvironment(), TERM: 'xterm', ...env },
    });
    this.child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.raw += chunk;
      for (const wake of this.waiters) wake();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
    void this.exited.then(() => {
      for (const wake of this.waiters) wake();
    });
  }

  /** The terminal output without escape sequences and carriage returns. */
  get text(): string {
    return stripVTControlCharacters(this.raw).replace(/\r/g, '');
  }

  /** Types a line. */
  type(line: string): void {
    this.child.stdin.write(`${line}\r`);
  }

  /** Resolves once the text matches `pattern`; rejects if the process exits first. */
  async waitFor(pattern: RegExp): Promise<void> {
    while (!pattern.test(this.text)) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`The app exited before printing ${pattern}. Its terminal showed:\n${this.text}`);
      }
      await new Promise<void>((resolve) => {
        const wake = () => {
          this.waiters.delete(wake);
          resolve();
        };
        this.waiters.add(wake);
      });
    }
  }

  /** Kills the process if it still runs (safe to call in afterEach). */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    return this.exited;
  }
}
