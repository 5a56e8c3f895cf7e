import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { findTsconfig, startTypecheck, typecheck } from './package-typecheck.js';

const packageRoot = fileURLToPath(new URL('..', import.meta.url));
const cache = join(packageRoot, 'node_modules', '.cache');
mkdirSync(cache, { recursive: true });
const scratch = mkdtempSync(join(cache, 'typecheck-fixture-'));

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** A package in the scratch folder: package.json, tsconfig.json (unless left out) and one source file. */
function writePackage(name: string, source: string, tsconfig = true): string {
  const root = join(scratch, name);
  mkdirSync(join(root, 'src', 'deeper'), { recursive: true });
  writeFileSync(join(root, 'package.json'), JSON.stringify({ name, type: 'module' }));
  if (tsconfig) {
    writeFileSync(
      join(root, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, types: [] }, include: ['src'] }),
    );
  }
  writeFileSync(join(root, 'src', 'index.ts'), source);
  return root;
}

describe('the kit typecheck', () => {
  it('finds the nearest tsconfig.json above the test file, and none past the package.json', () => {
    const root = writePackage('found', 'export const one = 1;\n');
    const testFile = join(root, 'src', 'deeper', 'my.test.ts');
    expect(findTsconfig(undefined, testFile)).toBe(join(root, 'tsconfig.json'));
    expect(findTsconfig(new URL('file:///elsewhere/tsconfig.json'), testFile)).toBe(
      '/elsewhere/tsconfig.json',
    );
    const bare = writePackage('bare', 'export const one = 1;\n', false);
    // The scratch folder's parents have tsconfig.json files, but the search stops at the package's own folder.
    expect(findTsconfig(undefined, join(bare, 'src', 'deeper', 'my.test.ts'))).toBeUndefined();
  });

  it("reports a type error with the compiler's diagnostics, again from its incremental state, and passes once fixed", {
    timeout: 240_000,
  }, async () => {
    const root = writePackage('broken', "export const count: number = 'three';\n");
    const project = join(root, 'tsconfig.json');
    const first = await startTypecheck(project);
    expect(first.status).not.toBe(0);
    expect(first.output).toMatch(/src\/index\.ts\(1,14\): error TS2322/);
    // Asking again in the same process gives the same compilation.
    expect(startTypecheck(project)).toBe(startTypecheck(project));

    // Run again (from the incremental state the first run left): still the error; once fixed, it passes.
    expect((await typecheck(project)).output).toMatch(/src\/index\.ts\(1,14\): error TS2322/);
    writeFileSync(join(root, 'src', 'index.ts'), 'export const count: number = 3;\n');
    expect(await typecheck(project)).toEqual({ project, output: '', status: 0 });
  });

  it('is the same module in the store, dispatch and provider kits', () => {
    const text = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
    const here = text('./package-typecheck.ts');
    expect(text('../../dispatch-testkit/src/package-typecheck.ts')).toBe(here);
    expect(text('../../provider-testkit/src/package-typecheck.ts')).toBe(here);
  });
});
