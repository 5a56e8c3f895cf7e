import { defineConfig } from 'vite';

/** Bundles the console into dist/ (index.html and assets/), served by the sample app at `/`. */
export default defineConfig({
  base: '/',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: true, target: 'es2022' },
});
