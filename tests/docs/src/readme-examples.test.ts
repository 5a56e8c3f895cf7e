import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MarkdownExample, markdownExamples } from './markdown-examples.js';
import { type QuickStartServer, startQuickStartServer } from './quick-start-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const examplesDir = fileURLToPath(new URL('../.examples/', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
/** The PostgreSQL server the store-postgres examples use (as `DATABASE_URL`); each example uses a schema of its own. */
const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Every package README, the root README first. */
const readmes = [
  'README.md',
  ...readdirSync(join(root, 'packages')).map((name) => `packages/${name}/README.md`),
].filter((file) => existsSync(join(root, file)));

interface WrittenExample extends MarkdownExample {
  /** Where the example was written to be compiled and run. */
  path: string;
}

/** Writes every example into its own module under tests/docs/.examples, where the workspace packages resolve. */
function writeExamples(): WrittenExample[] {
  rmSync(examplesDir, { recursive: true, force: true });
  return readmes.flatMap((file) =>
    markdownExamples(readFileSync(join(root, file), 'utf8'), file).map((example) => {
      const path = join(examplesDir, dirname(file).replace(/[/\\]/g, '-'), `line-${example.line}.ts`);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, example.code);
      return { ...example, path };
    }),
  );
}

/** Type errors of every example, by example path, each as `README.md:line: message`. */
function compile(examples: readonly WrittenExample[]): Map<string, string[]> {
  const base = ts.getParsedCommandLineOfConfigFile(
    join(root, 'tsconfig.base.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    },
  );
  const options: ts.CompilerOptions = {
    ...base?.options,
    strict: true,
    noEmit: true,
    declaration: false,
    declarationMap: false,
    sourceMap: false,
  };
  const program = ts.createProgram(
    examples.map((example) => example.path),
    options,
  );
  const errors = new Map<string, string[]>(examples.map((example) => [example.path, []]));
  const byPath = new Map(examples.map((example) => [example.path, example]));
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const path = diagnostic.file?.fileName;
    const example = path === undefined ? undefined : byPath.get(path);
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!example || diagnostic.start === undefined || !diagnostic.file) {
      throw new Error(`A README example does not compile: ${path ?? ''} ${text}`);
    }
    const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    errors.get(example.path)?.push(`${example.file}:${example.line + 1 + line}: ${text}`);
  }
  return errors;
}

/** Runs one example as a user would (`node` with tsx) in an empty folder; resolves with its stdout. */
async function run(example: WrittenExample, env: Record<string, string>): Promise<string> {
  const cwd = await mkdtemp(join(tmpdir(), 'lunation-readme-'));
  try {
    return await new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        ['--conditions=@lunation/source', '--import', tsx, example.path],
        { cwd, env: { ...process.env, ...env }, timeout: 30_000 },
        (error, stdout, stderr) => {
          if (error) {
            const where = `${example.file}:${example.line}`;
            reject(
              new Error(
                `The example at ${where} failed: ${error.message}\nstdout:\n${stdout}\nstderr:\n${stderr}`,
              ),
            );
          } else resolve(stdout);
        },
      );
    });
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}

/** Runs one example like `run`, with `unset` removed from the environment; resolves with its exit code and output. */
async function runUnset(
  example: WrittenExample,
  unset: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cwd = await mkdtemp(join(tmpdir(), 'lunation-readme-'));
  const env = { ...process.env };
  for (const name of unset) delete env[name];
  try {
    return await new Promise((resolve) => {
      const child = execFile(
        process.execPath,
        ['--conditions=@lunation/source', '--import', tsx, example.path],
        { cwd, env, timeout: 30_000 },
        (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
      );
    });
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}

/** Lets at most `limit` examples run at once (the machine has two cores). */
function limiter(limit: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    if (running >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await task();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

const examples = writeExamples();
const slot = limiter(2);

describe('README examples', { timeout: 120_000 }, () => {
  let errors: Map<string, string[]>;
  let server: QuickStartServer;

  // Type-checking every example in one program takes a while on a busy machine.
  beforeAll(async () => {
    errors = compile(examples);
    server = await startQuickStartServer();
  }, 180_000);

  afterAll(async () => {
    await server?.close();
  });

  it('are found in the READMEs', () => {
    expect(examples.length).toBeGreaterThan(0);
  });

  it("the runtime's quick start without OPENAI_API_KEY says why and exits 1", async () => {
    const quickStart = examples.find(
      (example) => example.file === 'packages/runtime/README.md' && example.code.includes('new OpenAIModel('),
    );
    if (!quickStart) throw new Error('no quick start in packages/runtime/README.md');
    const { code, stdout, stderr } = await slot(() =>
      runUnset(quickStart, ['OPENAI_API_KEY', 'OPENAI_BASE_URL']),
    );
    expect(stdout).not.toContain('after 1 steps');
    expect(stderr).toMatch(
      /^\nThe run failed: The OpenAI client could not send the request .*OPENAI_API_KEY/,
    );
    expect(code).toBe(1);
  });

  describe.each(readmes.filter((file) => examples.some((example) => example.file === file)))('%s', (file) => {
    const own = examples.filter((example) => example.file === file);
    it.concurrent.each(own.map((example) => [`line ${example.line}`, example] as const))(
      'the example at %s compiles (strict) and runs',
      async (_, example) => {
        expect(errors.get(example.path)).toEqual([]);
        if (!example.run) return;
        const stdout = await slot(() =>
          run(example, {
            OPENAI_API_KEY: 'test-key',
            OPENAI_BASE_URL: server.baseURL,
            DATABASE_URL: postgresUrl,
          }),
        );
        if (example.output !== undefined) expect(stdout).toBe(example.output);
      },
    );
  });
});
