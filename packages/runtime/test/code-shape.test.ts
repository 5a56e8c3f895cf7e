import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const packages = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const source = join(packages, 'runtime/src');

/**
 * The source directories held to the size limits below, relative to `packages/`: the runtime's loop and executor,
 * and the whole of `@lunation/fleet` (issue #37).
 */
const CHECKED_DIRECTORIES: readonly string[] = ['runtime/src/loop', 'runtime/src/executor', 'fleet/src'];

/** No class longer than this many lines. */
const MAX_CLASS_LINES = 300;
/** No function (or method, constructor, accessor, arrow function) longer than this many lines. */
const MAX_FUNCTION_LINES = 60;
/** No function with more parameters than this: more go into an options object. */
const MAX_PARAMETERS = 4;

function files(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return files(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** A class or function of a file, with its lines and parameter count. */
interface Shape {
  kind: 'class' | 'function';
  /** `file:line name`, relative to `packages/`. */
  where: string;
  lines: number;
  parameters: number;
}

function nameOf(node: ts.Node): string {
  const named = node as { name?: ts.Node };
  if (named.name && (ts.isIdentifier(named.name) || ts.isPrivateIdentifier(named.name)))
    return named.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '(anonymous)';
}

/** Every class and function of a source file, with its size. */
function shapesOf(file: string, text: string): Shape[] {
  const sourceFile = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const shapes: Shape[] = [];
  const visit = (node: ts.Node) => {
    const isClass = ts.isClassDeclaration(node) || ts.isClassExpression(node);
    if (isClass || ts.isFunctionLike(node)) {
      const start = sourceFile.getLineAndCharacterOfPosition(node.getStart(sourceFile)).line;
      const end = sourceFile.getLineAndCharacterOfPosition(node.getEnd()).line;
      const hasBody = isClass || (node as { body?: ts.Node }).body !== undefined;
      if (hasBody) {
        shapes.push({
          kind: isClass ? 'class' : 'function',
          where: `${relative(packages, file)}:${start + 1} ${nameOf(node)}`,
          lines: end - start + 1,
          parameters: isClass ? 0 : (node as ts.SignatureDeclaration).parameters.length,
        });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sourceFile);
  return shapes;
}

describe.each(CHECKED_DIRECTORIES)('%s', (directory) => {
  const shapes = files(join(packages, directory)).flatMap((file) =>
    shapesOf(file, readFileSync(file, 'utf8')),
  );

  it(`has no class over ${MAX_CLASS_LINES} lines`, () => {
    const long = shapes.filter((shape) => shape.kind === 'class' && shape.lines > MAX_CLASS_LINES);
    expect(long.map((shape) => `${shape.where}: ${shape.lines} lines`)).toEqual([]);
    expect(shapes.some((shape) => shape.kind === 'class')).toBe(true);
  });

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = shapes.filter((shape) => shape.kind === 'function' && shape.lines > MAX_FUNCTION_LINES);
    expect(long.map((shape) => `${shape.where}: ${shape.lines} lines`)).toEqual([]);
  });

  it(`has no parameter list over ${MAX_PARAMETERS}`, () => {
    const wide = shapes.filter((shape) => shape.parameters > MAX_PARAMETERS);
    expect(wide.map((shape) => `${shape.where}: ${shape.parameters} parameters`)).toEqual([]);
  });
});

describe('the shape check', () => {
  it('measures classes, functions and parameters', () => {
    const text = [
      'export class A {',
      '  method(a: number, b: number, c: number, d: number, e: number): void {',
      '    const inner = (x: number) => x;',
      '    inner(a);',
      '  }',
      '}',
    ].join('\n');
    expect(shapesOf(join(source, 'x.ts'), text)).toEqual([
      { kind: 'class', where: 'runtime/src/x.ts:1 A', lines: 6, parameters: 0 },
      { kind: 'function', where: 'runtime/src/x.ts:2 method', lines: 4, parameters: 5 },
      { kind: 'function', where: 'runtime/src/x.ts:3 inner', lines: 1, parameters: 1 },
    ]);
  });
});
