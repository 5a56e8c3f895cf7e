import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const README = `# The assistant's sandbox

This folder is the only place the assistant's \`read_file\` tool can read, and it asks you before every
read (answer "a" to allow it for the rest of the conversation). Paths that leave the folder, including
symbolic links pointing outside, are refused.

Put files here to ask questions about them, or start the assistant with \`--sandbox <folder>\` to use
another folder.
`;

/** Creates the sandbox folder if it is missing, with a README in it. An existing folder is left alone. */
export async function seedSandbox(sandbox: string): Promise<void> {
  const created = await mkdir(sandbox, { recursive: true });
  if (created !== undefined) await writeFile(join(sandbox, 'README.md'), README, { flag: 'wx' });
}
