import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/** The repository root (also when a package's `test` script runs vitest from the package's folder). */
const repository = fileURLToPath(new URL('.', import.meta.url));

/** Every workspace package with tests, run from source through the `@lunation/source` export condition. */
const roots = ['packages', 'apps', 'tests']
  .filter((dir) => existsSync(join(repository, dir)))
  .flatMap((dir) => readdirSync(join(repository, dir)).map((name) => `${dir}/${name}`))
  .concat('bench')
  .filter((dir) => existsSync(join(repository, dir, 'package.json')));

export default defineConfig({
  resolve: { conditions: ['@lunation/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@lunation/source', ...defaultServerConditions] } },
  test: {
    projects: roots.map((root) => ({
      extends: true,
      test: {
        name: root === 'tests/integration' ? 'integration' : (root.split('/')[1] ?? root),
        root: join(repository, root),
        include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
        testTimeout: 30_000,
        hookTimeout: 30_000,
      },
    })),
  },
});
