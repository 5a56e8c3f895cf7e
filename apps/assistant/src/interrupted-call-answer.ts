import type { InterruptedCallPayload, JsonValue } from '@lunation/contract';

/** The prompt for an `interrupted-call` ticket. */
export const INTERRUPTED_CALL_PROMPT = '    run it [a]gain / treat as [d]one / [f]ail: ';

/**
 * A chat answer to an `interrupted-call` ticket as a decision payload: `a`/`again`, `f`/`fail`, or `d`/`done`
 * optionally followed by the result (JSON, else the text itself), e.g. `d {"sent":true}`. Undefined when the
 * answer is none of these.
 */
export function parseInterruptedCallAnswer(answer: string): InterruptedCallPayload | undefined {
  const trimmed = answer.trim();
  const [word = '', ...rest] = trimmed.split(/\s+/);
  const choice = word.toLowerCase();
  if (choice === 'a' || choice === 'again') return { choice: 'rerun' };
  if (choice === 'f' || choice === 'fail') return { choice: 'fail' };
  if (choice !== 'd' && choice !== 'done') return undefined;
  const text = trimmed.slice(word.length).trim();
  if (rest.length === 0 || text === '') return { choice: 'done' };
  return { choice: 'done', result: parseResult(text) };
}

function parseResult(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    return text;
  }
}
