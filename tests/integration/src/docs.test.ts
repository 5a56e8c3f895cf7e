import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');

function section(markdown: string, heading: string): string {
  const start = markdown.indexOf(heading);
  if (start < 0) throw new Error(`missing section ${heading}`);
  const rest = markdown.slice(start + heading.length);
  const end = rest.search(/\n#{2,3} /);
  return (end < 0 ? rest : rest.slice(0, end)).trim();
}

describe('CONTRIBUTING.md checklists', () => {
  it('match the checklists next to the store and provider kits', () => {
    const contributing = read('CONTRIBUTING.md');
    expect(section(contributing, '### Add a store')).toBe(
      section(read('packages/store-testkit/README.md'), '## Add a store'),
    );
    expect(section(contributing, '### Add a provider')).toBe(
      section(read('packages/provider-testkit/README.md'), '## Add a provider'),
    );
  });

  it('mention only scripts the root package.json has', () => {
    const scripts = Object.keys(
      (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts,
    );
    const mentioned = [...read('CONTRIBUTING.md').matchAll(/`pnpm ([a-z:-]+)`/g)].map(
      (match) => match[1] as string,
    );
    const builtIn = new Set(['install', 'add', 'publish']);
    for (const script of mentioned)
      if (!builtIn.has(script)) expect(scripts, `pnpm ${script}`).toContain(script);
  });
});
