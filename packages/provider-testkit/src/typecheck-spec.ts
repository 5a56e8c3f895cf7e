import { beforeAll, expect, it } from 'vitest';
import {
  findTsconfig,
  startTypecheck,
  type TypecheckResult,
  typecheckTimeoutMs,
} from './package-typecheck.js';

/**
 * The adapter's package compiles against this contract (vitest does not typecheck: without this, a contract
 * change that breaks the adapter, such as a new part kind, passes its tests). The compiler starts before the
 * suite's first test and runs beside the others.
 */
export function typecheckSpec(tsconfig: string | URL | false | undefined): void {
  const title = "the adapter's package typechecks against this contract";
  if (tsconfig === false) {
    it.skip(`${title} (skipped: the suite was given tsconfig: false)`, () => {});
    return;
  }
  const testFile = expect.getState().testPath ?? '';
  const project = findTsconfig(tsconfig, testFile);
  let result: Promise<TypecheckResult> | undefined;
  beforeAll(() => {
    // Not awaited: the compiler runs while the other specs do.
    if (project !== undefined) result = startTypecheck(project);
    result?.catch(() => undefined);
  });
  it(title, { timeout: typecheckTimeoutMs + 10_000 }, async () => {
    if (project === undefined) {
      throw new Error(
        `No tsconfig.json found above ${testFile || 'the test file'} up to its package.json: pass the tsconfig option (e.g. new URL('../tsconfig.json', import.meta.url)), or tsconfig: false to skip this check`,
      );
    }
    const { output, status } = await (result ?? startTypecheck(project));
    expect(output).toBe('');
    expect(status).toBe(0);
  });
}
