import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoadedFrom, Machine } from './results.js';

export const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = join(benchDir, '..');

export function machine(): Machine {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryBytes: totalmem(),
    platform: `${process.platform} ${process.arch}`,
    commit: commit(),
  };
}

function commit(): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: repoDir,
      encoding: 'utf8',
    }).trim();
    // The bench's own outputs (results, the generated report) are not code: a run after a run is still clean.
    const dirty = execFileSync(
      'git',
      [
        'status',
        '--porcelain',
        '--untracked-files=no',
        '--',
        '.',
        ':!bench/results',
        ':!docs/benchmarks.md',
        ':!docs/benchmarks-w1.svg',
      ],
      { cwd: repoDir, encoding: 'utf8' },
    ).trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

/** The file `name` resolves to from this module (same resolver and conditions as this process's imports). */
function resolveFile(name: string, from: string = import.meta.url): string | undefined {
  try {
    return from === import.meta.url
      ? fileURLToPath(import.meta.resolve(name))
      : createRequire(from).resolve(name);
  } catch {
    return undefined;
  }
}

/** The installed version of a package, found by walking up from where it resolves. */
export function packageVersion(name: string, from?: string): string {
  const path = resolveFile(name, from);
  if (!path) return 'not installed';
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (manifest.name === name) return manifest.version ?? 'unknown';
  }
  return 'unknown';
}

/** Lunation's packages, as the harnesses import them. */
export const LUNATION_PACKAGES = [
  '@lunation/contract',
  '@lunation/runtime',
  '@lunation/store-memory',
  '@lunation/store-sqlite',
  '@lunation/store-redis',
  '@lunation/store-postgres',
] as const;

/**
 * Where this process loads Lunation from: `dist` when every package resolves to its built `dist/` JavaScript,
 * `source` when every one resolves to TypeScript under `src/` (the `@lunation/source` export condition), else
 * `mixed`. Resolution uses this process's conditions, exactly as the harnesses' imports do.
 */
export function lunationFrom(): { from: LoadedFrom; files: Record<string, string> } {
  const files: Record<string, string> = {};
  for (const name of LUNATION_PACKAGES) files[name] = resolveFile(name) ?? 'not installed';
  const kinds = new Set(
    Object.values(files).map((file) =>
      /\/dist\/[^/]+\.js$/.test(file) ? 'dist' : /\/src\/[^/]+\.ts$/.test(file) ? 'source' : 'other',
    ),
  );
  const from: LoadedFrom = kinds.size === 1 && !kinds.has('other') ? ([...kinds][0] as LoadedFrom) : 'mixed';
  return { from, files };
}

/** Versions of everything measured, as this process resolves them. */
export function versions(): Record<string, string> {
  const names = [
    '@lunation/runtime',
    'ai',
    '@ai-sdk/provider',
    '@langchain/langgraph',
    '@langchain/core',
    '@langchain/langgraph-checkpoint-sqlite',
    '@openai/agents',
    '@mastra/core',
    'zod',
    'ioredis',
    '@lunation/store-postgres',
    'pg',
    'kysely',
  ];
  const result: Record<string, string> = {};
  for (const name of names) {
    const version = packageVersion(name);
    if (version !== 'not installed') result[name] = version;
  }
  // The driver SqliteStore loads: resolved from the store's own files, as the store resolves it.
  const store = resolveFile('@lunation/store-sqlite');
  if (store) result['better-sqlite3 (SqliteStore)'] = packageVersion('better-sqlite3', store);
  return result;
}

/** Node flags without `--conditions` / `-C`, so a child resolves packages the way a user's process does. */
export function withoutConditions(flags: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < flags.length; index++) {
    const flag = flags[index] as string;
    if (flag === '--conditions' || flag === '-C') index++;
    else if (!flag.startsWith('--conditions=') && !flag.startsWith('-C=')) kept.push(flag);
  }
  return kept;
}
