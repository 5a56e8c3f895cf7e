import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropPostgresSchemas } from '../postgres.js';
import { deleteKeys } from '../redis.js';

/** Per-task scratch space: a temp directory for database files and a unique Redis key prefix. */
export interface Scratch {
  dir: string;
  /** Redis key prefix. */
  prefix: string;
  /** Prefix of thread ids (run keys). */
  runPrefix: string;
  redisUrl: string;
  dispose(): Promise<void>;
}

export function createScratch(redisUrl: string, label: string): Scratch {
  const dir = mkdtempSync(join(tmpdir(), 'lunation-bench-'));
  const id = randomBytes(4).toString('hex');
  const prefix = `lunation-bench:${label}:${id}`;
  return {
    dir,
    prefix,
    runPrefix: `t${id}-`,
    redisUrl,
    async dispose() {
      rmSync(dir, { recursive: true, force: true });
      await deleteKeys(redisUrl, prefix);
      await dropPostgresSchemas();
    },
  };
}
