import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/** Runs only the broken dispatchers through the conformance kit, from source, their files side by side. */
export default defineConfig({
  resolve: { conditions: ['@lunation/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@lunation/source', ...defaultServerConditions] } },
  test: {
    include: ['src/__fixtures__/broken-dispatchers-*.conformance.ts'],
    testTimeout: 30_000,
    // One worker per file of `run-broken-dispatchers.ts`: the kit mostly waits (locks, backoffs), so more
    // files than cores run side by side well.
    maxWorkers: 5,
  },
});
