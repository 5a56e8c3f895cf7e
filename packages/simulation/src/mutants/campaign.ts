import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LunationError } from '@lunation/contract';
import { applyMutation, type Mutation } from './mutation.js';

/** Children still running (killed by {@link ScratchCheckout.dispose}). */
const children = new Set<ChildProcess>();

/** The outcome of one mutation's run. */
export interface MutantResult {
  name: string;
  file: string;
  origin: string;
  world: 'runtime' | 'inbox';
  faults: string;
  /** The first seed with a violation (seeds run from 1), or undefined when none was found within `seedsRun`. */
  detectedAt: number | undefined;
  /** Seeds run (up to and including the detecting one). */
  seedsRun: number;
  /** The first violation of the detecting seed. */
  violation: string | undefined;
  /** What the simulator needs to reach it (from the mutation), shown when it was not detected. */
  needs: string | undefined;
  /** What catches it in the code as it is (from the mutation), shown when it was not detected. */
  masked: string | undefined;
  /** Real seconds the run took. */
  seconds: number;
}

/**
 * A scratch copy of a checkout to mutate: every tracked (and untracked, not ignored) file of the working tree is
 * copied, `node_modules` links are made again (the root's points at the original's installed packages; each
 * package's workspace links point inside the copy), so the copy's sources run with `--conditions=@lunation/source`
 * and no build. The working tree others use is never written.
 */
export class ScratchCheckout {
  readonly root: string;

  private constructor(root: string) {
    this.root = root;
  }

  /** Copies the checkout at `source` (a git work tree) to a new directory under the system's temporary one. */
  static create(source: string): ScratchCheckout {
    const listed = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
      cwd: source,
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    if (listed.status !== 0) {
      throw new LunationError('internal', `git ls-files failed in ${source}: ${listed.stderr}`);
    }
    const root = mkdtempSync(join(tmpdir(), 'lunation-mutants-'));
    for (const file of listed.stdout.split('\0')) {
      if (file === '') continue;
      const from = join(source, file);
      let stat: ReturnType<typeof lstatSync>;
      try {
        stat = lstatSync(from);
      } catch {
        continue; // deleted in the working tree
      }
      if (!stat.isFile()) continue;
      mkdirSync(dirname(join(root, file)), { recursive: true });
      copyFileSync(from, join(root, file));
    }
    symlinkSync(join(source, 'node_modules'), join(root, 'node_modules'));
    for (const group of ['packages', 'apps', 'tests']) {
      let entries: string[];
      try {
        entries = readdirSync(join(source, group));
      } catch {
        continue;
      }
      for (const entry of entries) {
        const modules = join(source, group, entry, 'node_modules');
        try {
          if (!lstatSync(modules).isDirectory()) continue;
        } catch {
          continue;
        }
        copyLinks(modules, join(root, group, entry, 'node_modules'));
      }
    }
    return new ScratchCheckout(root);
  }

  /**
   * Applies `mutation`, runs the simulator over seeds from 1 until the first violation (at most `maxSeeds`), and
   * restores the file.
   */
  async run(mutation: Mutation, maxSeeds: number, onOutput?: (line: string) => void): Promise<MutantResult> {
    const started = performance.now();
    const applied = applyMutation(this.root, mutation);
    try {
      const found = await simulate(this.root, {
        world: mutation.world ?? 'runtime',
        faults: mutation.faults ?? 'all',
        maxSeeds,
        ...(onOutput === undefined ? {} : { onOutput }),
      });
      return {
        name: mutation.name,
        file: mutation.file,
        origin: mutation.origin,
        world: mutation.world ?? 'runtime',
        faults: mutation.faults ?? 'all',
        detectedAt: found.seed,
        seedsRun: found.seedsRun,
        violation: found.violation,
        needs: mutation.needs,
        masked: mutation.masked,
        seconds: (performance.now() - started) / 1000,
      };
    } finally {
      applied.restore();
    }
  }

  /**
   * Applies `mutation` and replays one seed with `pnpm simulate --seed` (its trace and violations printed here),
   * then restores the file. Resolves the child's exit code.
   */
  replay(mutation: Mutation, seed: number): Promise<number> {
    const applied = applyMutation(this.root, mutation);
    const args = [
      '--conditions=@lunation/source',
      '--import',
      'tsx',
      'src/cli/simulate.ts',
      '--seed',
      String(seed),
    ];
    args.push('--world', mutation.world ?? 'runtime', '--faults', mutation.faults ?? 'all');
    return new Promise<number>((resolve, reject) => {
      const child = spawn(process.execPath, args, {
        cwd: join(this.root, 'packages', 'simulation'),
        stdio: 'inherit',
      });
      child.on('error', reject);
      child.on('close', (code) => resolve(code ?? 1));
    }).finally(() => applied.restore());
  }

  /** Stops the simulations still running and removes the copy. */
  dispose(): void {
    for (const child of children) child.kill();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** What `seek-cli.ts` reported: the first seed with a violation. */
export interface SimulateOutcome {
  seed: number | undefined;
  seedsRun: number;
  violation: string | undefined;
}

/** The marker of the line `seek-cli.ts` ends with (JSON after it). */
export const resultMarker = '@@simulate-result ';

/** Runs the simulator of the checkout at `root` (`seek-cli.ts`) in a child process until the first violation. */
export function simulate(
  root: string,
  options: { world: string; faults: string; maxSeeds: number; onOutput?: (line: string) => void },
): Promise<SimulateOutcome> {
  const args = [
    '--conditions=@lunation/source',
    '--import',
    'tsx',
    'src/mutants/seek-cli.ts',
    '--seeds',
    String(options.maxSeeds),
    '--world',
    options.world,
    '--faults',
    options.faults,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      cwd: join(root, 'packages', 'simulation'),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.add(child);
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      for (const line of chunk.split('\n')) if (line.trim() !== '') options.onOutput?.(line);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      children.delete(child);
      const line = out.split('\n').find((candidate) => candidate.startsWith(resultMarker));
      if (line === undefined) {
        // The child did not get to run seeds (the mutant does not load, say): the campaign cannot say, and fails.
        reject(
          new LunationError(
            'internal',
            `simulate ended (exit ${code}) without a result:\n${out.slice(-2_000)}\n${err.slice(-4_000)}`,
          ),
        );
        return;
      }
      resolve(JSON.parse(line.slice(resultMarker.length)) as SimulateOutcome);
    });
  });
}

/** Makes `to` again with the same links as `from` (relative links stay relative, so they point inside the copy). */
function copyLinks(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const entry of readdirSync(from)) {
    const source = join(from, entry);
    const stat = lstatSync(source);
    if (stat.isSymbolicLink()) symlinkSync(readlinkSync(source), join(to, entry));
    else if (stat.isDirectory()) copyLinks(source, join(to, entry));
    else copyFileSync(source, join(to, entry));
  }
}

/** The campaign's table in Markdown. */
export function resultTable(results: readonly MutantResult[], maxSeeds: number): string {
  const rows = results.map((result) => {
    const found =
      result.detectedAt === undefined
        ? `not detected in ${result.seedsRun}${result.needs ? ` (needs ${result.needs})` : ''}${result.masked ? ` (masked: ${result.masked})` : ''}`
        : String(result.detectedAt);
    const violation = (result.violation ?? '—').replaceAll('|', '\\|').replaceAll('\n', ' ');
    return `| \`${result.name}\` | ${result.origin} | \`${result.file}\` | ${result.world}/${result.faults} | ${found} | ${violation.length > 160 ? `${violation.slice(0, 157)}…` : violation} |`;
  });
  return [
    `Seeds from 1 until the first violation, at most ${maxSeeds} per mutation.`,
    '',
    '| mutation | origin | file | world/faults | seeds to detection | first violation |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}
