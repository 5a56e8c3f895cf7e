import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/** Runs only the broken stores through the conformance suite, from source. */
export default defineConfig({
  resolve: { conditions: ['@lunation/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@lunation/source', ...defaultServerConditions] } },
  test: { include: ['src/__fixtures__/broken-stores.conformance.ts'] },
});
