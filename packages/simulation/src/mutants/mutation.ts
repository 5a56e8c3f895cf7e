import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LunationError } from '@lunation/contract';
import type { FaultProfile } from '../fault-profiles.js';

/**
 * A deliberate defect: one small source edit (an exact search text in one file and its replacement) that breaks a
 * promise of the runtime, the fleet or a store, for checking that the simulator finds it. The search text must
 * occur exactly once: an edit of the code that moves it fails the campaign loudly instead of leaving a mutation
 * that silently no longer applies.
 */
export interface Mutation {
  /** A short kebab-case name (`--only NAME`). */
  name: string;
  /** What the defect breaks, in a sentence. */
  description: string;
  /** Where it comes from: a deliberate mutation, or a fix of the project reverted. */
  origin: string;
  /** The file, relative to the repository's root. */
  file: string;
  /** The exact text replaced; it must occur exactly once in `file`. */
  search: string;
  /** What it is replaced with. */
  replace: string;
  /** The world that should find it. @default 'runtime' */
  world?: 'runtime' | 'inbox';
  /** The fault profile of that world. @default 'all' */
  faults?: FaultProfile;
  /**
   * Why today's simulator may not reach it (what it needs: a feature not modelled yet). Recorded beside an
   * undetected result.
   */
  needs?: string;
  /**
   * Why the world cannot tell it from the code as it is, when another part catches what it breaks (defence in
   * depth): recorded beside an undetected result.
   */
  masked?: string;
}

/** Applies `mutation` to the checkout at `root`; throws `invalid-argument` when its search text is not found once. */
export function applyMutation(root: string, mutation: Mutation): { restore(): void } {
  const path = join(root, mutation.file);
  const source = readFileSync(path, 'utf8');
  const found = occurrences(source, mutation.search);
  if (found !== 1) {
    throw new LunationError(
      'invalid-argument',
      `Mutation "${mutation.name}": its search text occurs ${found} times in ${mutation.file} (it must occur once); the code moved: update the mutation in packages/simulation/src/mutants/mutations.ts`,
      { details: { mutation: mutation.name, file: mutation.file, occurrences: found } },
    );
  }
  const index = source.indexOf(mutation.search);
  writeFileSync(
    path,
    source.slice(0, index) + mutation.replace + source.slice(index + mutation.search.length),
  );
  return { restore: () => writeFileSync(path, source) };
}

/** Throws unless every mutation's search text occurs exactly once at `root` (nothing is written). */
export function checkMutations(root: string, mutations: readonly Mutation[]): void {
  const rotten: string[] = [];
  const names = new Set<string>();
  for (const mutation of mutations) {
    if (names.has(mutation.name)) rotten.push(`${mutation.name}: the name is used twice`);
    names.add(mutation.name);
    if (mutation.search === mutation.replace)
      rotten.push(`${mutation.name}: the replacement changes nothing`);
    let source: string;
    try {
      source = readFileSync(join(root, mutation.file), 'utf8');
    } catch {
      rotten.push(`${mutation.name}: ${mutation.file} does not exist`);
      continue;
    }
    const found = occurrences(source, mutation.search);
    if (found !== 1) rotten.push(`${mutation.name}: search text found ${found} times in ${mutation.file}`);
  }
  if (rotten.length > 0) {
    throw new LunationError(
      'invalid-argument',
      `Mutations no longer apply (update packages/simulation/src/mutants/mutations.ts):\n  ${rotten.join('\n  ')}`,
      { details: { rotten } },
    );
  }
}

function occurrences(text: string, search: string): number {
  if (search.length === 0) return 0;
  let count = 0;
  for (let at = text.indexOf(search); at !== -1; at = text.indexOf(search, at + 1)) count++;
  return count;
}
