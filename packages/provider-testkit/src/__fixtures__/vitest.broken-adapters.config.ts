import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@lunation/source', ...defaultServerConditions] },
  ssr: { resolve: { conditions: ['@lunation/source', ...defaultServerConditions] } },
  test: { include: ['src/__fixtures__/broken-adapters.conformance.ts'], testTimeout: 30_000 },
});
