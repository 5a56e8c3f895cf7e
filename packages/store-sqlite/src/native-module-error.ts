import { LunationError } from '@lunation/contract';

const HOW_TO_BUILD =
  'With pnpm, allow its build script (`pnpm approve-builds`, or `allowBuilds: { better-sqlite3: true }` in ' +
  'pnpm-workspace.yaml) and run `pnpm rebuild better-sqlite3`; with npm, run `npm rebuild better-sqlite3`. ' +
  'Building from source needs Python 3, make and a C++ compiler.';

/**
 * The error to raise when better-sqlite3's compiled module cannot be loaded, or undefined when `error` is
 * something else. Such a failure says nothing about the database file, so it must not be reported as one.
 */
export function nativeModuleError(error: unknown): LunationError | undefined {
  const message = error instanceof Error ? error.message : String(error);
  let problem: string | undefined;
  // better-sqlite3 12 looks its module up with `bindings`; 13 requires build/Release/better_sqlite3.node.
  if (/Could not locate the bindings file|Cannot find module .*better_sqlite3\.node/i.test(message)) {
    problem =
      "better-sqlite3's native module was never built: its install script did not run (pnpm 10 skips the build " +
      'scripts of dependencies it was not told to allow).';
  } else if (/NODE_MODULE_VERSION/.test(message)) {
    problem = `better-sqlite3's native module was built for another Node.js version than this one (${process.version}).`;
  } else if (
    /invalid ELF header|wrong ELF class|not a valid Win32 application|incompatible architecture/i.test(
      message,
    )
  ) {
    problem = "better-sqlite3's native module was built for another platform or architecture.";
  }
  if (problem === undefined) return undefined;
  return new LunationError('store-unavailable', `${problem} ${HOW_TO_BUILD}`, {
    cause: error,
    retryable: false,
    details: { driver: 'better-sqlite3' },
  });
}
