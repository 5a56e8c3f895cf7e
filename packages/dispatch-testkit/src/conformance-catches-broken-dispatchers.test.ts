import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { breakages, caughtBy } from './__fixtures__/broken-dispatchers.js';

const enabled = process.env.LUNATION_MUTATION === '1';

interface JsonReport {
  testResults: { assertionResults: { ancestorTitles: string[]; title: string; status: string }[] }[];
}

describe('the dispatcher conformance kit', () => {
  it.skipIf(!enabled)(
    'fails for every deliberately broken LocalDispatcher (slow, about 30 s: skipped unless LUNATION_MUTATION=1)',
    async () => {
      const root = fileURLToPath(new URL('..', import.meta.url));
      const vitest = join(
        dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
        'vitest.mjs',
      );
      const directory = await mkdtemp(join(tmpdir(), 'lunation-broken-dispatchers-'));
      const outputFile = join(directory, 'report.json');
      try {
        await promisify(execFile)(
          process.execPath,
          [
            vitest,
            'run',
            '--config',
            'src/__fixtures__/broken-dispatchers.vitest.config.ts',
            '--reporter=json',
            `--outputFile=${outputFile}`,
          ],
          { cwd: root, maxBuffer: 64 * 1024 * 1024 },
        ).catch(() => undefined);
        const report = JSON.parse(await readFile(outputFile, 'utf8')) as JsonReport;
        const failures = new Map<string, number>();
        const failed = new Map<string, string[]>();
        for (const file of report.testResults) {
          for (const test of file.assertionResults) {
            const suite = test.ancestorTitles[0] ?? '';
            failures.set(suite, (failures.get(suite) ?? 0) + (test.status === 'failed' ? 1 : 0));
            if (test.status === 'failed') failed.set(suite, [...(failed.get(suite) ?? []), test.title]);
          }
        }
        // The breakages a spec was written for fail that spec.
        for (const [name, title] of Object.entries(caughtBy)) {
          const suite = `Dispatcher conformance: broken: ${name}`;
          expect(failed.get(suite) ?? [], suite).toEqual(
            expect.arrayContaining([expect.stringContaining(title)]),
          );
        }
        const names = Object.keys(breakages).map((name) => `Dispatcher conformance: broken: ${name}`);
        expect([...failures.keys()].sort()).toEqual([...names].sort());
        for (const name of names) expect(failures.get(name), name).toBeGreaterThan(0);
      } finally {
        await rm(directory, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
