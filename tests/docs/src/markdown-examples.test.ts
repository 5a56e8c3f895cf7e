import { describe, expect, it } from 'vitest';
import { markdownExamples } from './markdown-examples.js';

describe('markdownExamples', () => {
  it('finds ts blocks, no-run flags and the output block that follows an example', () => {
    const markdown = [
      '# Title',
      '```ts',
      'console.log(1);',
      '```',
      'It prints:',
      '```text output',
      '1',
      '```',
      '```ts no-run',
      'await fetch("https://example.com");',
      '```',
      '```sh',
      'pnpm add x',
      '```',
      '```text output',
      'not an output: a shell block came in between',
      '```',
    ].join('\n');
    expect(markdownExamples(markdown, 'README.md')).toEqual([
      { file: 'README.md', line: 2, code: 'console.log(1);\n', run: true, output: '1\n' },
      {
        file: 'README.md',
        line: 9,
        code: 'await fetch("https://example.com");\n',
        run: false,
        output: undefined,
      },
    ]);
  });
});
