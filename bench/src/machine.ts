import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Machine } from './results.js';

export const benchDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const repoDir = join(benchDir, '..');

export function machine(): Machine {
  const cpu = cpus();
  return {
    cpu: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryBytes: totalmem(),
    node: process.version,
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
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], {
      cwd: repoDir,
      encoding: 'utf8',
    }).trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

/** The installed version of a package, found by walking up from where it resolves. */
export function packageVersion(name: string): string {
  let path: string;
  try {
    path = fileURLToPath(import.meta.resolve(name));
  } catch {
    return 'not installed';
  }
  for (let dir = dirname(path); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
    if (manifest.name === name) return manifest.version ?? 'unknown';
  }
  return 'unknown';
}

/** Versions of everything measured. */
export function versions(): Record<string, string> {
  const names = [
    '@lunation/runtime',
    'ai',
    '@langchain/langgraph',
    '@langchain/core',
    '@langchain/langgraph-checkpoint-sqlite',
    '@openai/agents',
    'zod',
    'ioredis',
    '@lunation/store-postgres',
    'pg',
    'kysely',
  ];
  const result: Record<string, string> = {};
  for (const name of names) result[name] = packageVersion(name);
  return result;
}
