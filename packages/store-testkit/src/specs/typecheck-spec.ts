import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { specificationVersions } from '@lunation/contract';
import { expect, it } from 'vitest';
import type { StoreSpecContext } from '../store-spec-context.js';

/**
 * The store declares this contract's specification version, and its package compiles against this contract
 * (vitest does not typecheck: without this, a contract change that breaks the store passes its tests).
 */
export function typecheckSpec(context: StoreSpecContext, tsconfig: string | URL | undefined): void {
  it('declares the store specification version of this contract', () => {
    expect(context.store.specificationVersion).toBe(specificationVersions.store);
  });

  const title = "the store's package typechecks against this contract";
  if (tsconfig === undefined) {
    it.skip(`${title} (skipped: the suite was given no tsconfig)`, () => {});
    return;
  }
  it(title, { timeout: 240_000 }, () => {
    const project = tsconfig instanceof URL ? fileURLToPath(tsconfig) : tsconfig;
    const compiler = createRequire(project).resolve('typescript/bin/tsc');
    const result = spawnSync(process.execPath, [compiler, '--noEmit', '--pretty', 'false', '-p', project], {
      encoding: 'utf8',
      timeout: 230_000,
    });
    expect(`${result.stdout}${result.stderr}`.trim()).toBe('');
    expect(result.status).toBe(0);
  });
}
