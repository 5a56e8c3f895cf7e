import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import type { LunationStore, ResumeDecision, SuspensionTicket } from '@lunation/contract';
import { type AgentRuntime, createId, type RunHandle } from '@lunation/runtime';
import { EventPrinter } from './event-printer.js';
import { LineReader } from './line-reader.js';
import { LOCAL_RESOURCE } from './token-auth.js';

export interface ChatOptions {
  runtime: AgentRuntime;
  store: LunationStore;
  /** Continue this thread; a new one is started when it is undefined or does not exist yet. */
  threadId: string | undefined;
  input: Readable & { isTTY?: boolean };
  output: Writable & { isTTY?: boolean };
  /** Printed first: the model and store in use. */
  banner: string;
  color: boolean;
}

const HELP = 'Commands: /exit (or Ctrl-D) quits, /help shows this. Ctrl-C stops a running reply.';

/**
 * The terminal chat: reads a line, streams the run's events, and asks y/n/always for every approval. A thread
 * left waiting for approval (the app was closed at the prompt) asks again when it is continued.
 */
export async function runChat(options: ChatOptions): Promise<void> {
  const { runtime, store } = options;
  const printer = new EventPrinter({
    output: options.output,
    color: options.color,
    live: options.output.isTTY === true,
  });
  const reader = new LineReader(options.input, options.output);
  const threadId = options.threadId ?? randomUUID();
  let active: RunHandle | undefined;
  const interrupt = () => {
    if (active) active.cancel('interrupted with Ctrl-C');
    else reader.close();
  };
  reader.onInterrupt(interrupt);
  process.on('SIGINT', interrupt);

  /** Prints a run's events as they come; resolves with the tickets it left open. */
  const follow = async (run: RunHandle): Promise<SuspensionTicket[]> => {
    active = run;
    try {
      for await (const event of run.events) printer.print(event);
      return (await run.result).openTickets;
    } finally {
      active = undefined;
    }
  };

  const ask = async (ticket: SuspensionTicket): Promise<ResumeDecision | undefined> => {
    printer.printTicket(ticket);
    while (true) {
      const answer = await reader.read(printer.style('yellow', '    allow? [y]es / [n]o / [a]lways: '));
      if (answer === undefined) return undefined;
      const choice = answer.trim().toLowerCase();
      const decision = { decisionId: createId(), ticketId: ticket.id };
      if (choice === 'y' || choice === 'yes') return { ...decision, action: 'resume' };
      if (choice === 'a' || choice === 'always')
        return { ...decision, action: 'resume', payload: { always: true } };
      if (choice === 'n' || choice === 'no') return { ...decision, action: 'cancel' };
      printer.line('    Please answer y, n or a ("always" allows this tool for the rest of the thread).');
    }
  };

  /** Asks about every open ticket and resumes, until none is left. False when the input ended first. */
  const settle = async (tickets: SuspensionTicket[]): Promise<boolean> => {
    let open = tickets;
    while (open.length > 0) {
      const decisions: ResumeDecision[] = [];
      for (const ticket of open) {
        const decision = await ask(ticket);
        if (!decision) {
          printer.line(`The approval stays open; answer it later with --thread ${threadId}`);
          return false;
        }
        decisions.push(decision);
      }
      const outcome = await runtime.sendDecisions(threadId, decisions);
      open = outcome.run ? await follow(outcome.run) : outcome.openTickets;
    }
    return true;
  };

  try {
    const thread = await store.getThread(threadId);
    printer.line(printer.style('dim', options.banner));
    if (thread) {
      printer.line(`Continuing thread ${threadId} (${thread.messageCount} messages).`);
    } else {
      printer.line(`Thread ${threadId} (new). Continue it later with: pnpm start --thread ${threadId}`);
    }
    printer.line(printer.style('dim', HELP));
    const latest = thread ? await store.getLatestRun(threadId) : undefined;
    if (latest?.status === 'waiting' && !(await settle(latest.openTickets))) return;
    while (true) {
      const line = await reader.read(printer.style('bold', 'you> '));
      if (line === undefined || line.trim() === '/exit') return;
      const text = line.trim();
      if (text === '') continue;
      if (text === '/help') {
        printer.line(HELP);
        continue;
      }
      try {
        const run = await runtime.run({ threadId, input: text, resourceId: LOCAL_RESOURCE });
        if (!(await settle(await follow(run)))) return;
      } catch (error) {
        printer.line(
          printer.style('red', `error: ${error instanceof Error ? error.message : String(error)}`),
        );
      }
    }
  } finally {
    process.off('SIGINT', interrupt);
    reader.close();
  }
}
