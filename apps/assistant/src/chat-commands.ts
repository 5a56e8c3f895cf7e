/** What the chat does with a line that starts with `/`. */
export type ChatCommand =
  | { type: 'exit' }
  | { type: 'help' }
  | { type: 'unknown'; name: string }
  /** `//text`: a message that starts with `/`, sent to the model without one of its slashes. */
  | { type: 'message'; text: string };

/** The help line, shown at start and by `/help`. */
export const CHAT_HELP =
  'Commands (also at an approval prompt): /exit or Ctrl-D quits, /help shows this. ' +
  'Ctrl-C stops a reply. Start a message with // to send one that begins with /.';

/** The command in a trimmed line, or undefined for an ordinary message. Commands never reach the model. */
export function parseChatCommand(text: string): ChatCommand | undefined {
  if (!text.startsWith('/')) return undefined;
  if (text.startsWith('//')) return { type: 'message', text: text.slice(1) };
  const name = text.split(/\s/, 1)[0] as string;
  if (name === '/exit' || name === '/quit') return { type: 'exit' };
  if (name === '/help' || name === '/?') return { type: 'help' };
  return { type: 'unknown', name };
}

/** The answer to an unknown command. */
export function unknownCommandText(name: string): string {
  return `Unknown command ${name}; nothing was sent to the model. ${CHAT_HELP}`;
}
