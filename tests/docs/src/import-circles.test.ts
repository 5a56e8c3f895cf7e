import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');

/** Production sources (not tests) of every package and app: `bench/` is a harness, not a product. */
function sources(): string[] {
  const files: string[] = [];
  const walk = (directory: string): void => {
    for (const name of readdirSync(directory)) {
      const path = join(directory, name);
      if (name === 'node_modules' || name === 'dist') continue;
      if (statSync(path).isDirectory()) walk(path);
      else if (/\.tsx?$/.test(name) && !/\.(test|spec)\.tsx?$|\.d\.ts$/.test(name)) files.push(path);
    }
  };
  for (const group of ['packages', 'apps']) {
    for (const name of readdirSync(join(root, group))) {
      const src = join(root, group, name, 'src');
      if (existsSync(src)) walk(src);
    }
  }
  return files;
}

/** The files a source imports (or re-exports) by a relative path, type-only imports included. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const info = ts.preProcessFile(text, true, true);
  const targets: string[] = [];
  for (const { fileName } of info.importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = resolve(dirname(file), fileName.replace(/\.js$/, ''));
    const target = [`${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')].find(
      existsSync,
    );
    if (target !== undefined) targets.push(target);
  }
  return targets;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const lowlink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string): void => {
    indices.set(node, index);
    lowlink.set(node, index++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!indices.has(next)) {
        connect(next);
        lowlink.set(node, Math.min(lowlink.get(node) as number, lowlink.get(next) as number));
      } else if (onStack.has(next)) {
        lowlink.set(node, Math.min(lowlink.get(node) as number, indices.get(next) as number));
      }
    }
    if (lowlink.get(node) !== indices.get(node)) return;
    const component: string[] = [];
    for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
      onStack.delete(member);
      component.push(member);
      if (member === node) break;
    }
    if (component.length > 1 || graph.get(node)?.includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!indices.has(node)) connect(node);
  return found;
}

describe('the import graph of the packages and apps', () => {
  it('has no import circle: every file stands above what it imports', () => {
    const files = sources();
    const graph = new Map(files.map((file) => [file, importsOf(file)]));
    expect(files.length).toBeGreaterThan(300);
    const found = circles(graph).map((component) => component.map((file) => relative(root, file)));
    expect(found).toEqual([]);
  });

  it('finds a circle when there is one', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
      ['e', ['e']],
    ]);
    expect(circles(graph)).toEqual([['a', 'b', 'c'], ['e']]);
  });
});
