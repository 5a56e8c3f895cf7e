/** A fenced TypeScript example of a README. */
export interface MarkdownExample {
  /** The README, relative to the repository root. */
  file: string;
  /** The line of the opening fence (1-based). */
  line: number;
  code: string;
  /** False for a `ts no-run` block: compiled, not run. */
  run: boolean;
  /** The text of a `text output` block right after it: what running the example prints. */
  output: string | undefined;
}

const FENCE = /^```(\S*)(.*)$/;

/**
 * The TypeScript examples of a markdown text, in order. Every ```ts block is one example, compiled on its own;
 * ```ts no-run marks one that is compiled but not run (it needs a real API key, say); a ```text output block
 * that follows an example, with only prose in between, holds what the example prints.
 */
export function markdownExamples(markdown: string, file: string): MarkdownExample[] {
  const examples: MarkdownExample[] = [];
  const lines = markdown.split('\n');
  let last: MarkdownExample | undefined;
  for (let index = 0; index < lines.length; index++) {
    const fence = FENCE.exec(lines[index] as string);
    if (!fence) continue;
    const language = fence[1] as string;
    const flags = (fence[2] as string).trim().split(/\s+/).filter(Boolean);
    const body: string[] = [];
    const start = index;
    for (index++; index < lines.length && !(lines[index] as string).startsWith('```'); index++) {
      body.push(lines[index] as string);
    }
    const code = `${body.join('\n')}\n`;
    if (language === 'ts' || language === 'typescript') {
      last = { file, line: start + 1, code, run: !flags.includes('no-run'), output: undefined };
      examples.push(last);
    } else if (language === 'text' && flags.includes('output') && last && last.output === undefined) {
      last.output = code;
    } else {
      last = undefined;
    }
  }
  return examples;
}
