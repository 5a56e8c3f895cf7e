import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

/**
 * What the seam rule forbids outside the defaults: reading time, setting timers and drawing randomness or ids
 * straight from the host, instead of through an injected `Clock` / `IdSource`.
 */
export type SeamRule =
  | 'Date.now'
  | 'new Date()'
  | 'performance.now'
  | 'process.hrtime'
  | 'setTimeout'
  | 'setInterval'
  | 'setImmediate'
  | 'clearTimeout'
  | 'clearInterval'
  | 'timers import'
  | 'AbortSignal.timeout'
  | 'Math.random'
  | 'randomUUID'
  | 'randomBytes'
  | 'createId';

/** One call site of a forbidden global. */
export interface SeamSite {
  /** Path from the repository root. */
  file: string;
  line: number;
  rule: SeamRule;
  /** The source line, trimmed. */
  text: string;
}

const timerGlobals = new Set(['setTimeout', 'setInterval', 'setImmediate', 'clearTimeout', 'clearInterval']);

/** The packages the rule covers: the contract, the runtime, the fleet, every store and dispatcher (not the kits). */
export function seamPackages(root: string): string[] {
  return readdirSync(join(root, 'packages'))
    .filter(
      (name) =>
        ['contract', 'runtime', 'fleet'].includes(name) ||
        ((name.startsWith('store-') || name.startsWith('dispatch-')) && !name.endsWith('-testkit')),
    )
    .sort();
}

/** The defaults, where the globals belong. */
const defaults = new Set(['packages/contract/src/clock.ts', 'packages/contract/src/id-source.ts']);

/** Production sources of a package: `src/**.ts` without tests and fixtures. */
function sources(root: string, directory: string): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== '__fixtures__' && entry.name !== 'node_modules') found.push(...sources(root, path));
    } else if (
      entry.name.endsWith('.ts') &&
      !entry.name.endsWith('.test.ts') &&
      !entry.name.endsWith('.d.ts')
    ) {
      found.push(path);
    }
  }
  return found.sort();
}

/** Every call site of a forbidden global in the covered packages, in file and line order. */
export function scanSeams(root: string): SeamSite[] {
  const sites: SeamSite[] = [];
  for (const name of seamPackages(root)) {
    for (const path of sources(root, join(root, 'packages', name, 'src'))) {
      const file = relative(root, path).split('\\').join('/');
      if (defaults.has(file)) continue;
      sites.push(...scanSource(file, readFileSync(path, 'utf8')));
    }
  }
  return sites;
}

/** The call sites of forbidden globals in one source text. */
export function scanSource(file: string, text: string): SeamSite[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lines = text.split('\n');
  const sites: SeamSite[] = [];
  const add = (node: ts.Node, rule: SeamRule) => {
    const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
    sites.push({ file, line: line + 1, rule, text: (lines[line] ?? '').trim() });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const module = node.moduleSpecifier.text;
      if (module === 'node:timers' || module === 'node:timers/promises' || module === 'timers') {
        add(node, 'timers import');
      }
    }
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      if (ts.isIdentifier(callee)) {
        if (timerGlobals.has(callee.text)) add(node, callee.text as SeamRule);
        else if (callee.text === 'randomUUID') add(node, 'randomUUID');
        else if (callee.text === 'randomBytes') add(node, 'randomBytes');
        else if (callee.text === 'createId') add(node, 'createId');
      } else if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)) {
        const target = `${callee.expression.text}.${callee.name.text}`;
        if (target === 'Date.now') add(node, 'Date.now');
        else if (target === 'performance.now') add(node, 'performance.now');
        else if (target === 'Math.random') add(node, 'Math.random');
        else if (target === 'AbortSignal.timeout') add(node, 'AbortSignal.timeout');
        else if (target === 'process.hrtime') add(node, 'process.hrtime');
        else if (target === 'crypto.randomUUID') add(node, 'randomUUID');
        else if (target === 'crypto.randomBytes') add(node, 'randomBytes');
        else if (target === 'globalThis.setTimeout' || target === 'globalThis.setInterval') {
          add(node, callee.name.text as SeamRule);
        }
      } else if (
        ts.isPropertyAccessExpression(callee) &&
        ts.isPropertyAccessExpression(callee.expression) &&
        ts.isIdentifier(callee.expression.expression) &&
        callee.expression.expression.text === 'process' &&
        callee.expression.name.text === 'hrtime'
      ) {
        add(node, 'process.hrtime');
      }
    }
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === 'Date') {
      if ((node.arguments?.length ?? 0) === 0) add(node, 'new Date()');
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return sites;
}

/** Counts of sites by file, then rule: the shape of the allow-list. */
export type SeamCounts = Record<string, Partial<Record<SeamRule, number>>>;

/** The sites counted by file and rule, files and rules sorted. */
export function countSeams(sites: readonly SeamSite[]): SeamCounts {
  const counts: SeamCounts = {};
  for (const site of sites) {
    const file = counts[site.file] ?? {};
    file[site.rule] = (file[site.rule] ?? 0) + 1;
    counts[site.file] = file;
  }
  return Object.fromEntries(
    Object.keys(counts)
      .sort()
      .map((file) => [
        file,
        Object.fromEntries(
          Object.entries(counts[file] as Record<string, number>).sort(([a], [b]) =>
            a < b ? -1 : a > b ? 1 : 0,
          ),
        ),
      ]),
  );
}

/** The total of each rule over every file. */
export function ruleTotals(counts: SeamCounts): Map<SeamRule, number> {
  const totals = new Map<SeamRule, number>();
  for (const rules of Object.values(counts)) {
    for (const [rule, count] of Object.entries(rules) as [SeamRule, number][]) {
      totals.set(rule, (totals.get(rule) ?? 0) + count);
    }
  }
  return totals;
}
