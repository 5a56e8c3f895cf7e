import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoDir } from '../machine.js';

/** The packages the A/B children load (the Lunation harness and its stores), built in each tree. */
export const AB_PACKAGES = [
  '@lunation/contract',
  '@lunation/runtime',
  '@lunation/store-memory',
  '@lunation/store-sqlite',
  '@lunation/store-redis',
  '@lunation/store-postgres',
] as const;

/** One side of an A/B comparison: a checkout whose packages are built. */
export interface AbTree {
  side: 'base' | 'head';
  /** The checkout's root directory. */
  dir: string;
  /** The full commit. */
  commit: string;
  /** Short commit and subject, and whether the working tree's packages have uncommitted changes. */
  describe: string;
}

/** Where base trees live: git-ignored, kept between runs so the install and build are reused. */
export const AB_CACHE_DIR = join(repoDir, '.cache/bench-ab');

function git(args: string[], cwd = repoDir): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** The commit a revision names; throws a readable error for a revision git does not know. */
export function resolveCommit(ref: string, cwd = repoDir): string {
  try {
    return git(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], cwd);
  } catch {
    throw new Error(`--ab: git knows no commit "${ref}" in ${cwd}; fetch it or name another revision`);
  }
}

function subject(commit: string): string {
  return git(['log', '-1', '--format=%h %s', commit]).slice(0, 100);
}

/** True when the working tree has changes to tracked files outside the bench's own outputs. */
function dirty(cwd: string): boolean {
  return (
    git(
      ['status', '--porcelain', '--untracked-files=no', '--', '.', ':!bench/results', ':!docs/benchmarks*'],
      cwd,
    ).length > 0
  );
}

function run(command: string, args: string[], cwd: string, log: (line: string) => void): void {
  log(`  $ ${command} ${args.join(' ')}   (in ${cwd})`);
  try {
    execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed in ${cwd}:\n${`${stdout}\n${stderr}`.slice(-3000)}`);
  }
}

/** Builds the A/B packages (and what they depend on) in a checkout; turbo's cache makes a second build cheap. */
export function buildPackages(dir: string, log: (line: string) => void): void {
  run(
    'pnpm',
    [
      'exec',
      'turbo',
      'run',
      'build',
      ...AB_PACKAGES.map((name) => `--filter=${name}...`),
      '--output-logs=errors-only',
    ],
    dir,
    log,
  );
}

/** The working tree this bench runs from (head by default), its packages built. */
export function workingTree(log: (line: string) => void): AbTree {
  const commit = git(['rev-parse', 'HEAD']);
  buildPackages(repoDir, log);
  return {
    side: 'head',
    dir: repoDir,
    commit,
    describe: `${subject(commit)}${dirty(repoDir) ? ' (with uncommitted changes in packages/)' : ''}`,
  };
}

/**
 * A checkout of `ref` in its own git worktree under `.cache/bench-ab/`, installed (`pnpm install
 * --frozen-lockfile --prefer-offline`, from the shared pnpm store) and built; a tree prepared before is reused.
 */
export function commitTree(ref: string, side: AbTree['side'], log: (line: string) => void): AbTree {
  const commit = resolveCommit(ref);
  const dir = join(AB_CACHE_DIR, commit.slice(0, 12));
  if (existsSync(dir)) {
    const at = git(['rev-parse', 'HEAD'], dir);
    if (at !== commit)
      throw new Error(`${dir} is checked out at ${at}, not ${commit}; remove it and run again`);
    if (dirty(dir))
      throw new Error(`${dir} has local changes; remove it (git worktree remove --force) and run again`);
  } else {
    mkdirSync(AB_CACHE_DIR, { recursive: true });
    log(`Preparing ${side} ${commit.slice(0, 12)} in ${dir}`);
    run('git', ['worktree', 'add', '--detach', dir, commit], repoDir, log);
  }
  // Written after a complete install, so an interrupted one is redone.
  const marker = join(dir, 'node_modules/.bench-ab-installed');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== commit) {
    run('pnpm', ['install', '--frozen-lockfile', '--prefer-offline'], dir, log);
    writeFileSync(marker, commit);
  }
  buildPackages(dir, log);
  return { side, dir, commit, describe: subject(commit) };
}
