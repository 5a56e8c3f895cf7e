import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/** Runs only the broken dispatcher through the conformance kit, from source. */
export default defineConfig({
  resolve: { conditions: ['@lunation/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@lunation/source', ...defaultServerConditions] } },
  test: { include: ['src/__fixtures__/broken-dispatcher.conformance.ts'], testTimeout: 30_000 },
});
