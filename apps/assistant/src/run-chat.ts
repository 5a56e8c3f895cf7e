import { randomUUID } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  INTERRUPTED_CALL_ACTION,
  LunationError,
  type LunationStore,
  type ResumeDecision,
  type SuspensionTicket,
  type ThreadRecord,
} from '@lunation/contract';
import type { AgentRuntime, RunHandle } from '@lunation/runtime';
import { createId } from '@lunation/runtime/internal';
import { CHAT_HELP, parseChatCommand, unknownCommandText } from './chat-commands.js';
import { shellWord } from './command-line.js';
import { EventPrinter } from './event-printer.js';
import { INTERRUPTED_CALL_PROMPT, parseInterruptedCallAnswer } from './interrupted-call-answer.js';
import { LineReader } from './line-reader.js';
import { RECAP_MESSAGES, recapLines } from './thread-recap.js';
import { LOCAL_RESOURCE } from './token-auth.js';
import { ASK_USER_ACTION } from './tools/ask-user-tool.js';

export interface ChatOptions {
  runtime: AgentRuntime;
  store: LunationStore;
  /** Continue this thread; a new one is started when it is undefined. */
  threadId: string | undefined;
  /** Start `threadId` when it does not exist (otherwise an unknown id is a `not-found` error). */
  create?: boolean;
  input: Readable & { isTTY?: boolean };
  output: Writable & { isTTY?: boolean };
  /** The flags that reach the same store again, for the "continue it later" hints (see `parseCommandLine`). */
  continueFlags?: readonly string[];
  /** Printed first: the model and store in use. */
  banner: string;
  color: boolean;
}

/**
 * The terminal chat: reads a line, streams the run's events, and asks y/n/always for every approval. A thread
 * left waiting for approval (the app was closed at the prompt) asks again when it is continued. Lines starting
 * with `/` are commands, answered here and never sent to the model.
 */
export async function runChat(options: ChatOptions): Promise<void> {
  const { runtime, store } = options;
  const existing = options.threadId === undefined ? undefined : await store.getThread(options.threadId);
  if (options.threadId !== undefined && !existing && !options.create) {
    throw new LunationError(
      'not-found',
      `There is no thread "${options.threadId}" in the ${store.kind} store; check the id, or add --create to start a new thread with it`,
    );
  }
  const printer = new EventPrinter({
    output: options.output,
    color: options.color,
    live: options.output.isTTY === true,
  });
  const reader = new LineReader(options.input, options.output);
  const threadId = options.threadId ?? randomUUID();
  const continueCommand = ['pnpm start --thread', shellWord(threadId), ...(options.continueFlags ?? [])].join(
    ' ',
  );
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
      printer.stopThinking();
      active = undefined;
    }
  };

  const ask = async (ticket: SuspensionTicket): Promise<ResumeDecision | undefined> => {
    printer.printTicket(ticket);
    const interrupted = ticket.action === INTERRUPTED_CALL_ACTION;
    const question = ticket.action === ASK_USER_ACTION;
    while (true) {
      const answer = await reader.read(
        printer.style(
          'yellow',
          interrupted
            ? INTERRUPTED_CALL_PROMPT
            : question
              ? '    your answer: '
              : '    allow? [y]es / [n]o / [a]lways: ',
        ),
      );
      if (answer === undefined) return undefined;
      const command = parseChatCommand(answer.trim());
      if (command?.type === 'exit') return undefined;
      if (command?.type === 'help') {
        printer.line(`    ${CHAT_HELP}`);
        continue;
      }
      if (command?.type === 'unknown') {
        printer.line(`    ${unknownCommandText(command.name)}`);
        continue;
      }
      const decision = { decisionId: createId(), ticketId: ticket.id };
      if (interrupted) {
        const payload = parseInterruptedCallAnswer(answer);
        if (payload) return { ...decision, action: 'resume', payload };
        printer.line(
          '    Please answer a (run it again), d (it is done; a result may follow: d {"json"}) or f (fail it).',
        );
        continue;
      }
      if (question) {
        if (answer.trim() !== '')
          return { ...decision, action: 'resume', payload: { answer: answer.trim() } };
        printer.line('    Please type an answer.');
        continue;
      }
      const choice = answer.trim().toLowerCase();
      if (choice === 'y' || choice === 'yes') return { ...decision, action: 'resume' };
      if (choice === 'a' || choice === 'always')
        return { ...decision, action: 'resume', payload: { always: true } };
      if (choice === 'n' || choice === 'no') return { ...decision, action: 'cancel' };
      printer.line('    Please answer y, n or a ("always" allows this tool for the rest of the thread).');
    }
  };

  /** Says which thread continues and how it left off: its last few texts. */
  const printRecap = async (thread: ThreadRecord): Promise<void> => {
    // The tail of the thread is enough: a recap shows at most a few texts, skipping tool messages.
    const fromSeq = Math.max(1, thread.messageCount - RECAP_MESSAGES * 4 + 1);
    const records = await store.listMessages(threadId, { fromSeq });
    printer.rememberCalls(records.map((record) => record.message));
    const lines = recapLines(records);
    printer.line(
      `Continuing thread ${threadId} (${thread.messageCount} messages)${lines.length > 0 ? '. The last ones:' : '.'}`,
    );
    for (const recap of lines) printer.line(printer.style('dim', `  ${recap}`));
  };

  /** Asks about every open ticket and resumes, until none is left. False when the input ended first. */
  const settle = async (tickets: SuspensionTicket[]): Promise<boolean> => {
    let open = tickets;
    while (open.length > 0) {
      const decisions: ResumeDecision[] = [];
      for (const ticket of open) {
        const decision = await ask(ticket);
        if (!decision) {
          printer.line(
            store.kind === 'memory'
              ? 'The approval stays open until the app exits (the memory store forgets the thread then)'
              : `The approval stays open; answer it later with: ${continueCommand}`,
          );
          return false;
        }
        decisions.push(decision);
      }
      const outcome = await runtime.sendDecisions({ threadId }, decisions);
      open = outcome.run ? await follow(outcome.run) : outcome.openTickets;
    }
    return true;
  };

  try {
    printer.line(printer.style('dim', options.banner));
    if (existing) await printRecap(existing);
    else if (store.kind === 'memory')
      printer.line(`Thread ${threadId} (new; the memory store forgets it on exit).`);
    else printer.line(`Thread ${threadId} (new). Continue it later with: ${continueCommand}`);
    printer.line(printer.style('dim', CHAT_HELP));
    const latest = existing ? await store.getLatestRun(threadId) : undefined;
    if (latest?.status === 'running') {
      // The process running it died (a crash, kill -9, a closed terminal): continue it now, without new input.
      printer.line('The last run stopped in the middle (the app was closed or crashed); continuing it now.');
      const run = await whenThreadFree(() => runtime.run({ threadId, resourceId: LOCAL_RESOURCE }), printer);
      if (!(await settle(await follow(run)))) return;
    } else if (latest?.status === 'waiting' && !(await settle(latest.openTickets))) return;
    while (true) {
      const line = await reader.read(printer.style('bold', 'you> '));
      if (line === undefined) return;
      let text = line.trim();
      if (text === '') continue;
      const command = parseChatCommand(text);
      if (command?.type === 'exit') return;
      if (command?.type === 'help') {
        printer.line(CHAT_HELP);
        continue;
      }
      if (command?.type === 'unknown') {
        printer.line(unknownCommandText(command.name));
        continue;
      }
      if (command?.type === 'message') text = command.text;
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

/** How long a continued run waits at most for the lease of a process that died. */
const TAKE_OVER_WAIT_MS = 15_000;

/**
 * Starts a run once the thread's lease can be had: a process that died mid-run holds it until this app (same
 * data folder, same lease owner) may take it over, at most 4.5 s later. `thread-busy` after that is a live twin.
 */
async function whenThreadFree(start: () => Promise<RunHandle>, printer: EventPrinter): Promise<RunHandle> {
  const until = Date.now() + TAKE_OVER_WAIT_MS;
  let told = false;
  while (true) {
    try {
      return await start();
    } catch (error) {
      if (!LunationError.isInstance(error) || error.code !== 'thread-busy' || Date.now() > until) throw error;
      const retryAfterMs = Number(error.details?.retryAfterMs);
      if (!told) {
        printer.line(
          printer.style('dim', "  (waiting for the stopped process's hold on the thread to lapse)"),
        );
        told = true;
      }
      await sleep(Number.isFinite(retryAfterMs) ? Math.min(Math.max(retryAfterMs, 100), 1_000) : 500);
    }
  }
}
