import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeModuleError } from './native-module-error.js';

const fixture = join(dirname(fileURLToPath(import.meta.url)), '__fixtures__', 'open-store.ts');

/** Runs the fixture in a new process, with `--import` options in front; resolves with its JSON answer. */
async function openInChild(imports: string[], path: string): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--conditions=@lunation/source',
      '--import',
      'tsx',
      ...imports.flatMap((url) => ['--import', url]),
      fixture,
      path,
    ],
    { cwd: dirname(fixture), timeout: 20_000 },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('a better-sqlite3 whose native build is missing (as after a skipped install script)', () => {
  let directory: string;
  let withoutBuild: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'lunation-sqlite-native-'));
    // A copy of the installed driver without its build/ folder, with its own dependency linked next to it.
    const require = createRequire(import.meta.url);
    const driver = dirname(require.resolve('better-sqlite3/package.json'));
    const copy = join(directory, 'node_modules', 'better-sqlite3');
    await cp(join(driver, 'lib'), join(copy, 'lib'), { recursive: true });
    await cp(join(driver, 'package.json'), join(copy, 'package.json'));
    await mkdir(join(copy, 'node_modules'));
    const manifest = JSON.parse(await readFile(join(driver, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const dependency of Object.keys(manifest.dependencies ?? {})) {
      const path = dirname(createRequire(join(driver, 'package.json')).resolve(`${dependency}/package.json`));
      await symlink(path, join(copy, 'node_modules', dependency), 'dir');
    }
    // A module hook that makes `import 'better-sqlite3'` load the copy.
    const hooks = join(directory, 'hooks.mjs');
    await writeFile(
      hooks,
      `export async function resolve(specifier, context, next) {
  if (specifier === 'better-sqlite3') return { url: ${JSON.stringify(pathToFileURL(join(copy, 'lib', 'index.js')).href)}, shortCircuit: true };
  return next(specifier, context);
}\n`,
    );
    withoutBuild = join(directory, 'register.mjs');
    await writeFile(
      withoutBuild,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('opens normally with the real driver (the fixture works)', async () => {
    expect(await openInChild([], join(directory, 'works.db'))).toEqual({ ok: true });
  });

  it('fails with store-unavailable naming the fix, not the database file', async () => {
    const answer = await openInChild([pathToFileURL(withoutBuild).href], join(directory, 'never.db'));
    expect(answer.code).toBe('store-unavailable');
    expect(answer.message).toBe(
      "better-sqlite3's native module was never built: its install script did not run (pnpm 10 skips the build " +
        'scripts of dependencies it was not told to allow). With pnpm, allow its build script (`pnpm approve-builds`, ' +
        'or `allowBuilds: { better-sqlite3: true }` in pnpm-workspace.yaml) and run `pnpm rebuild better-sqlite3`; ' +
        'with npm, run `npm rebuild better-sqlite3`. Building from source needs Python 3, make and a C++ compiler.',
    );
  });
});

describe('nativeModuleError', () => {
  it('names a module built for another Node.js version', () => {
    const error = new Error(
      "The module '/x/better_sqlite3.node' was compiled against a different Node.js version using NODE_MODULE_VERSION 115. This version of Node.js requires NODE_MODULE_VERSION 137.",
    );
    expect(nativeModuleError(error)?.message).toMatch(
      new RegExp(
        `^better-sqlite3's native module was built for another Node.js version than this one \\(${process.version.replace(/\./g, '\\.')}\\)\\. With pnpm`,
      ),
    );
  });

  it('leaves other errors alone', () => {
    expect(nativeModuleError(new Error('unable to open database file'))).toBeUndefined();
  });
});
