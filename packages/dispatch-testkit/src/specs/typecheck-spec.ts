import { specificationVersions } from '@lunation/contract';
import { beforeAll, expect, it } from 'vitest';
import type { DispatchSpecContext } from '../dispatch-spec-context.js';
import {
  findTsconfig,
  startTypecheck,
  type TypecheckResult,
  typecheckTimeoutMs,
} from '../package-typecheck.js';

/**
 * The dispatcher declares this contract's specification version, and its package compiles against this
 * contract (vitest does not typecheck: without this, a contract change that breaks the dispatcher passes). The
 * compiler starts before the suite's first test and runs beside the others.
 */
export function typecheckSpec(
  context: DispatchSpecContext,
  tsconfig: string | URL | false | undefined,
): void {
  it('declares the dispatcher specification version of this contract', async () => {
    const dispatcher = await context.open();
    expect(dispatcher.specificationVersion).toBe(specificationVersions.dispatcher);
  });

  const title = "the dispatcher's package typechecks against this contract";
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
