import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

/**
 * The adapter's package compiles against this contract (vitest does not typecheck: without this, a contract
 * change that breaks the adapter, such as a new part kind, passes its tests).
 */
export function typecheckSpec(tsconfig: string | URL | undefined): void {
  const title = "the adapter's package typechecks against this contract";
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
