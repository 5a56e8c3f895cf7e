import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { specificationVersions } from '@lunation/contract';
import { expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';

/**
 * The dispatcher declares this contract's specification version, and its package compiles against this
 * contract (vitest does not typecheck: without this, a contract change that breaks the dispatcher passes).
 */
export function typecheckSpec(context: DispatchSpecContext, tsconfig: string | URL | undefined): void {
  it('declares the dispatcher specification version of this contract', async () => {
    const dispatcher = await context.open();
    expect(dispatcher.specificationVersion).toBe(specificationVersions.dispatcher);
  });

  const title = "the dispatcher's package typechecks against this contract";
  if (tsconfig === undefined) {
    it.skip(`${title} (skipped: the suite was given no tsconfig)`, () => {});
    return;
  }
  it(title, { timeout: 240_000 }, () => {
    const project = tsconfig instanceof URL ? fileURLToPath(tsconfig) : tsconfig;
    const compiler = createRequire(project).resolve('typescript/bin/tsc');
    const { stdout, stderr, status } = spawnSync(
      process.execPath,
      [compiler, '--noEmit', '--pretty', 'false', '-p', project],
      { encoding: 'utf8', timeout: 230_000 },
    );
    expect(`${stdout}${stderr}`.trim()).toBe('');
    expect(status).toBe(0);
  });
}
