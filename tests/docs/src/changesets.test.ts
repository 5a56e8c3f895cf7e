import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const changesetDir = join(root, '.changeset');
const config = JSON.parse(readFileSync(join(changesetDir, 'config.json'), 'utf8')) as { ignore: string[] };

/** The packages a changeset's front matter names (`"@lunation/x": patch`, quoted either way). */
function packagesOf(text: string): string[] {
  const frontMatter = /^---\n([\s\S]*?)\n---/.exec(text)?.[1] ?? '';
  return [...frontMatter.matchAll(/^["']?([^"'\s]+)["']?:\s*(?:patch|minor|major)\s*$/gm)].map(
    (match) => match[1] as string,
  );
}

/** Every public package's name, by folder. */
function publicPackages(): Set<string> {
  const names = new Set<string>();
  for (const folder of readdirSync(join(root, 'packages'))) {
    const manifest = JSON.parse(readFileSync(join(root, 'packages', folder, 'package.json'), 'utf8')) as {
      name: string;
      private?: boolean;
    };
    if (manifest.private !== true) names.add(manifest.name);
  }
  return names;
}

// An empty changeset (no packages) is allowed: it records a change that releases nothing.
// `changeset version` refuses a changeset mixing ignored (private) and published packages, and never consumes
// one naming only ignored packages: both fail the release. This finds them in seconds instead of in the rehearsal.
describe('pending changesets', () => {
  const files = readdirSync(changesetDir).filter((name) => name.endsWith('.md') && name !== 'README.md');
  const published = publicPackages();

  it.each(files)('%s names only published packages', (file) => {
    const named = packagesOf(readFileSync(join(changesetDir, file), 'utf8'));
    expect(named.filter((name) => config.ignore.includes(name) || !published.has(name))).toEqual([]);
  });
});
