import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const doc = readFileSync(join(root, 'docs', 'approval-path.md'), 'utf8');

interface PathCounts {
  files: number;
  functions: number;
  reentries: number;
  storeRoundTrips: number;
}

interface Step {
  depth: number;
  file: string;
  name: string;
}

/** The `file › function` lines of a path list, with their depth (two spaces a level). */
function stepsOf(block: string): Step[] {
  return block
    .split('\n')
    .filter((line) => line.includes(' › '))
    .map((line) => {
      const [file, name] = line.trim().split(' › ') as [string, string];
      return { depth: (line.length - line.trimStart().length) / 2, file, name };
    });
}

/** Counts a path by the doc's rule: a re-entry is a call into a file already left, none of it on the stack. */
function countPath(steps: Step[]): PathCounts {
  const seen = new Set<string>();
  const stack: Step[] = [];
  let reentries = 0;
  let storeRoundTrips = 0;
  for (const step of steps) {
    while (stack.length > 0 && (stack.at(-1) as Step).depth >= step.depth) stack.pop();
    if (seen.has(step.file) && !stack.some((caller) => caller.file === step.file)) {
      reentries++;
      if (/(persistence|sqlite-store)\.ts$/.test(step.file)) storeRoundTrips++;
    }
    seen.add(step.file);
    stack.push(step);
  }
  return { files: seen.size, functions: steps.length, reentries, storeRoundTrips };
}

/** The path list under a `## ` heading. */
function pathUnder(heading: string): Step[] {
  const section = doc.split(`## ${heading}\n`)[1]?.split('\n## ')[0] ?? '';
  const block = /```\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error(`docs/approval-path.md has no path list under "## ${heading}"`);
  return stepsOf(block);
}

/** The counts table's row whose first cell starts with `label`. */
function rowOf(label: string): PathCounts {
  const row = doc.split('\n').find((line) => line.startsWith(`| ${label}`));
  if (row === undefined) throw new Error(`docs/approval-path.md has no counts row "${label}"`);
  const [files, functions, reentries, storeRoundTrips] = row
    .split('|')
    .slice(2, 6)
    .map((cell) => Number(cell.trim()));
  return { files, functions, reentries, storeRoundTrips } as PathCounts;
}

describe('docs/approval-path.md', () => {
  it.each([
    ['The path before', 'before'],
    ['The path now', 'now'],
  ])('the counts table agrees with the list under "%s"', (heading, label) => {
    expect(countPath(pathUnder(heading))).toEqual(rowOf(label));
  });

  it('names only files that exist in the packages', () => {
    for (const heading of ['The path now']) {
      for (const step of pathUnder(heading)) {
        expect(existsSync(join(root, 'packages', step.file)), step.file).toBe(true);
      }
    }
  });

  it('counts a re-entry only when the file is off the stack', () => {
    const steps = stepsOf(
      ['a.ts › f', '  b.ts › g', '    a.ts › callback', '  b.ts › h', '  c.ts › i', '  b.ts › j'].join('\n'),
    );
    // b.ts › h and b.ts › j re-enter b.ts; a.ts › callback runs while a.ts › f is on the stack.
    expect(countPath(steps)).toEqual({ files: 3, functions: 6, reentries: 2, storeRoundTrips: 0 });
  });
});
