import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolContext } from '@lunation/runtime';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createReadFileTool } from './read-file-tool.js';
import { seedSandbox } from './seed-sandbox.js';

describe('read_file', () => {
  let root: string;
  let sandbox: string;
  let read: (path: string) => Promise<unknown>;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'read-file-'));
    sandbox = join(root, 'sandbox');
    await seedSandbox(sandbox);
    await mkdir(join(sandbox, 'notes'));
    await writeFile(join(sandbox, 'notes', 'todo.txt'), 'buy milk\n');
    await writeFile(join(root, 'secret.txt'), 'top secret');
    const tool = createReadFileTool({ sandbox, maxBytes: 16 });
    // read_file uses nothing from its context.
    read = (path) => Promise.resolve(tool.execute({ path }, {} as ToolContext));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('reads a file inside the sandbox, cutting it at maxBytes', async () => {
    expect(await read('notes/todo.txt')).toEqual({ path: 'notes/todo.txt', content: 'buy milk\n' });
    expect(await read('./notes/../README.md')).toEqual({
      path: './notes/../README.md',
      content: "# The assistant'",
      truncated: true,
    });
  });

  it('lists a folder', async () => {
    expect(await read('.')).toEqual({ path: '.', entries: ['notes/', 'README.md'] });
  });

  it('follows a symbolic link that stays inside the sandbox', async () => {
    await symlink(join(sandbox, 'notes', 'todo.txt'), join(sandbox, 'todo-link.txt'));
    expect(await read('todo-link.txt')).toEqual({ path: 'todo-link.txt', content: 'buy milk\n' });
  });

  it.each([
    ['../secret.txt', '"../secret.txt" is outside the sandbox folder; access refused'],
    ['notes/../../secret.txt', '"notes/../../secret.txt" is outside the sandbox folder; access refused'],
    ['/etc/passwd', '"/etc/passwd" is an absolute path; give a path relative to the sandbox folder'],
    ['missing.txt', 'There is no file "missing.txt" in the sandbox folder'],
  ])('refuses %s', async (path, message) => {
    await expect(read(path)).rejects.toThrow(message);
  });

  it('refuses symbolic links that lead outside the sandbox, to a file or through a folder', async () => {
    await symlink(join(root, 'secret.txt'), join(sandbox, 'innocent.txt'));
    await symlink(root, join(sandbox, 'up'));
    await expect(read('innocent.txt')).rejects.toThrow(
      '"innocent.txt" is a link that leads outside the sandbox folder; access refused',
    );
    await expect(read('up/secret.txt')).rejects.toThrow(
      '"up/secret.txt" is a link that leads outside the sandbox folder; access refused',
    );
  });

  it('seeds a missing sandbox once and leaves an existing one alone', async () => {
    await writeFile(join(sandbox, 'README.md'), 'my own readme');
    await seedSandbox(sandbox);
    expect(await read('README.md')).toEqual({ path: 'README.md', content: 'my own readme' });
  });
});
