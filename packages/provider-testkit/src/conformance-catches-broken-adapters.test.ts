import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface AssertionResult {
  ancestorTitles: string[];
  title: string;
  status: 'passed' | 'failed' | 'skipped' | 'pending';
}

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const scratch = mkdtempSync(join(tmpdir(), 'lunation-testkit-'));
let results: AssertionResult[] = [];

/** Runs the kit against deliberately broken adapters in a child vitest and reads its JSON report. */
beforeAll(async () => {
  const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
  const report = join(scratch, 'report.json');
  await new Promise<void>((resolve) => {
    execFile(
      process.execPath,
      [
        vitest,
        'run',
        '--config',
        'src/__fixtures__/vitest.broken-adapters.config.ts',
        '--reporter=json',
        `--outputFile=${report}`,
      ],
      { cwd: packageDir, env: { ...process.env, CI: 'true' }, timeout: 120_000 },
      () => resolve(),
    );
  });
  const parsed = JSON.parse(readFileSync(report, 'utf8')) as {
    testResults: { assertionResults: AssertionResult[] }[];
  };
  results = parsed.testResults.flatMap((file) => file.assertionResults);
}, 150_000);

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

function outcomes(suite: string): Map<string, AssertionResult['status']> {
  return new Map(
    results
      .filter((result) =>
        result.ancestorTitles.some((title) => title.startsWith(`${suite} provider conformance`)),
      )
      .map((result) => [result.title, result.status]),
  );
}

const usageTest =
  'reports usage including cache and reasoning tokens (0 for what the wire lacks: cacheReadTokens, cacheWriteTokens, reasoningTokens)';

/** The structured-output specs the NDJSON wire runs (it has no refusal field). */
const structuredOutputSpecs = new Set([
  'asks for the format with the tools, streams a tool call, then the JSON answer after the tool result',
  'asks for the format again on a repair turn (the prose answer, then the correction) and streams the answer as written',
  'streams an answer that breaks the schema unchanged, leaving validation to the runtime',
  'asks for a list answer wrapped in an object ({ value: [...] }), its items sent as any schema',
]);

describe('the conformance suite fails adapters that drop or invent what the wire carries', () => {
  it('ran every scenario for every broken adapter', () => {
    for (const suite of [
      'broken:drop-output-tokens',
      'broken:drop-arguments',
      'broken:invent-cache-reads',
      'broken:drop-response-format',
    ]) {
      expect(outcomes(suite).size, suite).toBeGreaterThan(25);
    }
  });

  it('fails an adapter that drops the output tokens the wire carries, and only where usage is checked', () => {
    const suite = outcomes('broken:drop-output-tokens');
    expect(suite.get(usageTest)).toBe('failed');
    expect(suite.get('streams text deltas in order, then one usage, then one finish')).toBe('failed');
    expect(
      suite.get('streams one tool call as start, argument pieces and an end carrying the whole arguments'),
    ).toBe('passed');
    expect(suite.get('maps HTTP 429 to "rate-limited" (retryable)')).toBe('passed');
  });

  it('fails an adapter that drops tool-call arguments sent whole', () => {
    const suite = outcomes('broken:drop-arguments');
    expect(
      suite.get('streams one tool call as start, argument pieces and an end carrying the whole arguments'),
    ).toBe('failed');
    expect(suite.get('streams parallel tool calls whose argument pieces arrive interleaved')).toBe('failed');
    expect(suite.get(usageTest)).toBe('passed');
  });

  it('fails an adapter that reports cache reads the wire has no field for', () => {
    const suite = outcomes('broken:invent-cache-reads');
    expect(suite.get(usageTest)).toBe('failed');
    expect(
      suite.get('streams one tool call as start, argument pieces and an end carrying the whole arguments'),
    ).toBe('passed');
  });

  it('fails an adapter that drops the response format, in every structured-output spec and nowhere else', () => {
    const suite = outcomes('broken:drop-response-format');
    const structured = [...suite].filter(([title]) => structuredOutputSpecs.has(title));
    expect(structured.map(([title]) => title).sort()).toEqual([...structuredOutputSpecs].sort());
    for (const [title, status] of structured) expect(status, title).toBe('failed');
    for (const [title, status] of suite) {
      if (!structuredOutputSpecs.has(title)) expect(status, title).not.toBe('failed');
    }
  });

  it('fails an honest adapter whose wire claims streamed arguments but sends calls whole', () => {
    const suite = outcomes('misdeclared:streamed-arguments');
    expect(
      suite.get('streams one tool call as start, argument pieces and an end carrying the whole arguments'),
    ).toBe('failed');
  });
});
