import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const source = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function files(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return files(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** Relative imports, type-only ones included: a file's types are part of what it depends on. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^(?:import|export)\s[\s\S]*?\sfrom\s+'(\.[^']+)';/gm)].map((match) =>
    resolve(dirname(file), (match[1] ?? '').replace(/\.js$/, '.ts')),
  );
}

/** Every cycle of a graph, each as `a → b → a`. */
function cyclesOf(graph: ReadonlyMap<string, readonly string[]>, name: (node: string) => string): string[] {
  const cycles: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'visiting') {
      cycles.push([...path.slice(path.indexOf(file)), file].map(name).join(' → '));
      return;
    }
    state.set(file, 'visiting');
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  return cycles;
}

/** A file's room: its directory under `src/` (`loop`, `executor`, …), or the file itself at the top. */
function roomOf(file: string): string {
  const path = relative(source, file);
  const slash = path.indexOf('/');
  return slash === -1 ? path : path.slice(0, slash);
}

describe('the runtime source', () => {
  it('has no import cycles', () => {
    const graph = new Map(files(source).map((file) => [file, imports(file)]));
    expect(cyclesOf(graph, (file) => relative(source, file))).toEqual([]);
    expect(graph.size).toBeGreaterThan(30);
  });

  it('has no upward arrow: its rooms (directories and top-level files) import each other without cycles', () => {
    const rooms = new Map<string, Set<string>>();
    for (const file of files(source)) {
      const from = roomOf(file);
      const targets = rooms.get(from) ?? new Set<string>();
      for (const target of imports(file)) if (roomOf(target) !== from) targets.add(roomOf(target));
      rooms.set(from, targets);
    }
    const graph = new Map([...rooms].map(([room, targets]) => [room, [...targets]]));
    expect(cyclesOf(graph, (room) => room)).toEqual([]);
    expect(graph.get('runtime-keys.ts')).not.toContain('loop');
    expect(graph.get('loop')).toContain('runtime-keys.ts');
  });
});
