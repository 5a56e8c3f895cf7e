/**
 * How deeply arrays and objects nest in a JSON text (`{}` is 1, `[{}]` is 2), found by one scan of the text
 * without parsing it, so that a hostile body cannot exhaust the stack of a recursive parser or validator.
 * The text need not be valid JSON: brackets inside strings are skipped, anything else is counted as seen.
 */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === BACKSLASH) index++;
      else if (code === QUOTE) inString = false;
    } else if (code === QUOTE) inString = true;
    else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) depth--;
  }
  return deepest;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
