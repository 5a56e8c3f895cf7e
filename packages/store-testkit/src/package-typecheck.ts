import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the TypeScript compiler said about a package. */
export interface TypecheckResult {
  /** The `tsconfig.json` it compiled with. */
  project: string;
  /** Its diagnostics (empty when the package compiles). */
  output: string;
  /** Its exit code (`null` when it was killed for taking longer than the timeout). */
  status: number | null;
}

/** How long the compiler may take before the check fails. */
export const typecheckTimeoutMs = 230_000;

const started = new Map<string, Promise<TypecheckResult>>();

/**
 * The `tsconfig.json` the kit compiles a package with: `tsconfig` when given, else the nearest one above the test
 * file (up to the folder of its `package.json`); undefined when there is none.
 */
export function findTsconfig(tsconfig: string | URL | undefined, testFile: string): string | undefined {
  if (tsconfig !== undefined) return tsconfig instanceof URL ? fileURLToPath(tsconfig) : tsconfig;
  for (let directory = dirname(testFile); ; directory = dirname(directory)) {
    const candidate = join(directory, 'tsconfig.json');
    if (existsSync(candidate)) return candidate;
    if (existsSync(join(directory, 'package.json')) || dirname(directory) === directory) return undefined;
  }
}

/**
 * Starts the TypeScript compiler over a package in the background (once per project and process), so that it runs
 * while the other specs do. It keeps its incremental state in `node_modules/.cache/lunation-testkit/` beside the
 * project, so a run that changed nothing checks only what changed.
 */
export function startTypecheck(project: string): Promise<TypecheckResult> {
  let result = started.get(project);
  if (result === undefined) {
    result = typecheck(project);
    started.set(project, result);
  }
  return result;
}

/** Runs the TypeScript compiler over a package once (its incremental state carried over from earlier runs). */
export function typecheck(project: string): Promise<TypecheckResult> {
  return new Promise((resolve, reject) => {
    let compiler: string;
    try {
      compiler = createRequire(project).resolve('typescript/bin/tsc');
    } catch (error) {
      reject(
        new Error(
          `The kit typechecks your package with the TypeScript compiler, but "typescript" cannot be found from ${project}; install it as a devDependency (or pass tsconfig: false to skip the check)`,
          { cause: error },
        ),
      );
      return;
    }
    const cache = join(dirname(project), 'node_modules', '.cache', 'lunation-testkit');
    mkdirSync(cache, { recursive: true });
    const key = createHash('sha256').update(project).digest('hex').slice(0, 12);
    const buildInfo = join(cache, `${basename(project, '.json')}-${key}.tsbuildinfo`);
    const child = spawn(
      process.execPath,
      [
        compiler,
        '--noEmit',
        '--pretty',
        'false',
        '-p',
        project,
        '--incremental',
        '--tsBuildInfoFile',
        buildInfo,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], timeout: typecheckTimeoutMs, killSignal: 'SIGKILL' },
    );
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ project, output: output.trim(), status }));
  });
}
