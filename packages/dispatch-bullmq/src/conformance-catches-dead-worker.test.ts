import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const enabled = process.env.LUNATION_MUTATION === '1';

interface JsonReport {
  testResults: { assertionResults: { title: string; status: string }[] }[];
}

describe("the dispatcher kit's fleet spec", () => {
  it.skipIf(!enabled)(
    'fails its SIGKILL test for a BullMQDispatcher that never notices a dead worker (slow, about a minute: skipped unless LUNATION_MUTATION=1)',
    async () => {
      const root = fileURLToPath(new URL('..', import.meta.url));
      const vitest = join(
        dirname(createRequire(import.meta.url).resolve('vitest/package.json')),
        'vitest.mjs',
      );
      const directory = await mkdtemp(join(tmpdir(), 'lunation-broken-bullmq-'));
      const outputFile = join(directory, 'report.json');
      try {
        await promisify(execFile)(
          process.execPath,
          [
            vitest,
            'run',
            '--config',
            'src/__fixtures__/broken-dispatcher.vitest.config.ts',
            '-t',
            'SIGKILL',
            '--reporter=json',
            `--outputFile=${outputFile}`,
          ],
          { cwd: root, maxBuffer: 64 * 1024 * 1024 },
        ).catch(() => undefined);
        const report = JSON.parse(await readFile(outputFile, 'utf8')) as JsonReport;
        const results = report.testResults.flatMap((file) => file.assertionResults);
        const killed = results.filter((test) => test.title.includes('SIGKILL'));
        expect(killed.map((test) => test.status)).toEqual(['failed']);
      } finally {
        await rm(directory, { recursive: true, force: true });
      }
    },
    300_000,
  );
});
