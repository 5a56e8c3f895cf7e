import { existsSync, readdirSync } from 'node:fs';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/**
 * Every workspace package with tests (and the bench's own), run from source through the `@lunation/source` export
 * condition.
 */
const roots = ['packages', 'apps', 'tests']
  .filter((dir) => existsSync(dir))
  .flatMap((dir) => readdirSync(dir).map((name) => `${dir}/${name}`))
  .concat('bench')
  .filter((dir) => existsSync(`${dir}/package.json`));

export default defineConfig({
  resolve: { conditions: ['@lunation/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@lunation/source', ...defaultServerConditions] } },
  test: {
    projects: roots.map((root) => ({
      extends: true,
      test: {
        name: root === 'tests/integration' ? 'integration' : (root.split('/')[1] ?? root),
        root,
        include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
        testTimeout: 30_000,
        hookTimeout: 30_000,
      },
    })),
  },
});
