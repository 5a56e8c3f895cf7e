import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it, vi } from 'vitest';

afterAll(() => {
  vi.restoreAllMocks();
});

describe('README structured output example', () => {
  it('is the code in examples/structured-output.ts, word for word', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const example = readFileSync(new URL('../examples/structured-output.ts', import.meta.url), 'utf8')
      .replace("'../src/index.js'", "'@lunation/runtime'")
      .replace("'../src/testing/index.js'", "'@lunation/runtime/testing'");
    expect(readme).toContain(example.trim());
  });

  it('runs: the prose answer is repaired once, then the typed invoice is logged', async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const error = vi.spyOn(console, 'error').mockImplementation(() => {});
    await import('../examples/structured-output.js');
    expect(log.mock.calls).toEqual([['ACME 129.5 EUR, due 2026-05-01']]);
    expect(error).not.toHaveBeenCalled();
  });
});
