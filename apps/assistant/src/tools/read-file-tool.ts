import { open, readdir, realpath, stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { LunationError } from '@lunation/contract';
import { defineTool } from '@lunation/runtime';
import { z } from 'zod';

export interface ReadFileToolOptions {
  /** The folder the tool may read; nothing outside it (not even through a symbolic link). */
  sandbox: string;
  /** Longest content returned; the rest is cut off. @default 65536 */
  maxBytes?: number;
}

function isInside(root: string, path: string): boolean {
  const fromRoot = relative(root, path);
  return fromRoot === '' || (fromRoot !== '..' && !fromRoot.startsWith(`..${sep}`) && !isAbsolute(fromRoot));
}

/** The real path of `requested` inside `sandbox`; refuses absolute paths and anything leading outside. */
export async function resolveInSandbox(sandbox: string, requested: string): Promise<string> {
  if (isAbsolute(requested)) {
    throw new LunationError(
      'invalid-argument',
      `"${requested}" is an absolute path; give a path relative to the sandbox folder`,
    );
  }
  const root = await realpath(sandbox);
  const target = resolve(root, requested);
  if (!isInside(root, target)) {
    throw new LunationError(
      'invalid-argument',
      `"${requested}" is outside the sandbox folder; access refused`,
    );
  }
  let real: string;
  try {
    real = await realpath(target);
  } catch (error) {
    throw new LunationError('not-found', `There is no file "${requested}" in the sandbox folder`, {
      cause: error,
    });
  }
  if (!isInside(root, real)) {
    throw new LunationError(
      'invalid-argument',
      `"${requested}" is a link that leads outside the sandbox folder; access refused`,
    );
  }
  return real;
}

async function readStart(path: string, maxBytes: number): Promise<{ content: string; truncated?: true }> {
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(maxBytes + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const content = buffer.subarray(0, Math.min(bytesRead, maxBytes)).toString('utf8');
    return bytesRead > maxBytes ? { content, truncated: true } : { content };
  } finally {
    await handle.close();
  }
}

/** Reads text files (or lists folders) inside a sandbox folder. Pair it with an `ask` permission rule. */
export function createReadFileTool(options: ReadFileToolOptions) {
  const maxBytes = options.maxBytes ?? 65_536;
  return defineTool({
    name: 'read_file',
    description:
      'Reads a text file from the sandbox folder, or lists a folder. Paths are relative to the sandbox; ' +
      '"." lists the sandbox itself. The user must approve each read.',
    input: z.object({
      path: z.string().min(1).max(1024).describe('A path relative to the sandbox, e.g. "README.md"'),
    }),
    execute: async ({ path }) => {
      const real = await resolveInSandbox(options.sandbox, path);
      const stats = await stat(real);
      if (stats.isDirectory()) {
        const entries = await readdir(real, { withFileTypes: true });
        return {
          path,
          entries: entries
            .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
            .sort((a, b) => a.localeCompare(b)),
        };
      }
      if (!stats.isFile()) {
        throw new LunationError('invalid-argument', `"${path}" is not a regular file`);
      }
      return { path, ...(await readStart(real, maxBytes)) };
    },
  });
}
