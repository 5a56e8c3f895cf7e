import { Session } from 'node:inspector';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** A function of a source file, as `file › name` names it. */
export interface EnteredFunction {
  /** The file, relative to `packages/` (`runtime/src/loop/tool-calls.ts`). */
  file: string;
  /** `Class.method`, `new Class` or a function's name. */
  name: string;
}

interface FunctionCoverage {
  functionName: string;
  ranges: Array<{ startOffset: number; endOffset: number; count: number }>;
}

interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: FunctionCoverage[];
}

/**
 * Records which named functions of the workspace's packages run, through V8's precise call counts (the
 * inspector's `Profiler`): `take()` answers the functions entered since the last `take()`, in source order
 * per file. A function is named from the module's code as it runs (the TypeScript compiler API reads it):
 * declared functions, class methods and constructors, and arrow functions kept in a `const` or a class field.
 * Inline callbacks, getters and setters are not named, so not counted.
 */
export class FunctionTracer {
  private readonly session = new Session();
  private readonly names = new Map<string, Map<number, string | undefined>>();

  constructor(
    /** Which files count: their path relative to `packages/`. */
    private readonly counts: (file: string) => boolean,
  ) {
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Debugger.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    this.post('Profiler.takePreciseCoverage');
  }

  /** The functions entered since the tracer started or last answered. */
  take(): EnteredFunction[] {
    const { result } = this.post('Profiler.takePreciseCoverage') as { result: ScriptCoverage[] };
    const entered: EnteredFunction[] = [];
    for (const script of result) {
      const file = packageFile(script.url);
      if (file === undefined || !this.counts(file)) continue;
      const names = this.namesOf(script.scriptId);
      const seen = new Set<string>();
      const ran = script.functions
        .map((fn) => fn.ranges[0])
        .filter((range) => range !== undefined && range.count > 0)
        .sort((a, b) => (a?.startOffset ?? 0) - (b?.startOffset ?? 0));
      for (const range of ran) {
        const name = names.get(range?.startOffset ?? -1);
        if (name === undefined || seen.has(name)) continue;
        seen.add(name);
        entered.push({ file, name });
      }
    }
    // By file; within a file, in source order (the sort is stable).
    return entered.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  }

  stop(): void {
    this.post('Profiler.stopPreciseCoverage');
    this.post('Debugger.disable');
    this.post('Profiler.disable');
    this.session.disconnect();
  }

  /** The names of a module's functions by their start offset in the code V8 runs. */
  private namesOf(scriptId: string): Map<number, string | undefined> {
    let names = this.names.get(scriptId);
    if (names === undefined) {
      const { scriptSource } = this.post('Debugger.getScriptSource', { scriptId }) as {
        scriptSource: string;
      };
      names = functionNames(scriptSource);
      this.names.set(scriptId, names);
    }
    return names;
  }

  /** The inspector answers a session of the same thread at once: the answer is there when `post` returns. */
  private post(method: string, params?: object): unknown {
    let answer: unknown;
    let failure: Error | null = null;
    let answered = false;
    this.session.post(method, params as never, (error, result) => {
      failure = error;
      answer = result;
      answered = true;
    });
    if (!answered) throw new Error(`The inspector did not answer ${method} at once`);
    if (failure) throw failure;
    return answer;
  }
}

/** A module's URL as a path relative to `packages/`, or undefined outside the workspace's packages. */
function packageFile(url: string): string | undefined {
  if (!url.startsWith('file://')) return undefined;
  const path = fileURLToPath(url);
  const at = path.lastIndexOf('/packages/');
  return at === -1 || path.includes('/node_modules/') ? undefined : path.slice(at + '/packages/'.length);
}

/** Every function of a module's code by the offset V8 reports for it; undefined for one that is not named. */
export function functionNames(code: string): Map<number, string | undefined> {
  const source = ts.createSourceFile('module.js', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const names = new Map<number, string | undefined>();
  const visit = (node: ts.Node) => {
    // A class is its constructor: V8 starts it at the class (without one of its own) or at `constructor`.
    if (ts.isClassLike(node))
      names.set(node.getStart(source), node.name ? `new ${node.name.text}` : undefined);
    else if (ts.isFunctionLike(node)) names.set(startOf(node, source), nameOf(node));
    ts.forEachChild(node, visit);
  };
  visit(source);
  return names;
}

/** Where V8 starts a function: at its name for a method, at its parameters for an arrow function. */
function startOf(node: ts.SignatureDeclaration, source: ts.SourceFile): number {
  if (ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)) {
    const modifiers = node.modifiers?.filter((modifier) => modifier.kind === ts.SyntaxKind.AsyncKeyword);
    return modifiers?.[0]?.getStart(source) ?? (node.name ?? node).getStart(source);
  }
  return node.getStart(source);
}

function nameOf(node: ts.SignatureDeclaration): string | undefined {
  const owner = ts.isClassLike(node.parent) ? node.parent.name?.text : undefined;
  if (ts.isFunctionDeclaration(node)) return node.name?.text;
  if (ts.isConstructorDeclaration(node)) return owner === undefined ? undefined : `new ${owner}`;
  if (ts.isMethodDeclaration(node) && owner !== undefined && ts.isIdentifier(node.name)) {
    return `${owner}.${node.name.text}`;
  }
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    const parent = node.parent;
    if (ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name) && isModuleLevel(parent)) {
      return parent.name.text;
    }
    if (ts.isPropertyDeclaration(parent) && ts.isClassLike(parent.parent) && ts.isIdentifier(parent.name)) {
      return `${parent.parent.name?.text}.${parent.name.text}`;
    }
  }
  return undefined;
}

function isModuleLevel(declaration: ts.VariableDeclaration): boolean {
  let node: ts.Node = declaration;
  while (node.parent && !ts.isSourceFile(node.parent)) {
    if (ts.isFunctionLike(node.parent) && !isModuleWrapper(node.parent)) return false;
    node = node.parent;
  }
  return true;
}

/** The function the module runner wraps a module's code in (its parameters are the runner's `__vite_ssr_*`). */
function isModuleWrapper(node: ts.SignatureDeclaration): boolean {
  const first = node.parameters[0]?.name;
  return first !== undefined && ts.isIdentifier(first) && first.text.startsWith('__vite_ssr');
}
