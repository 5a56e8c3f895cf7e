/**
 * One side of one A/B round, in a fresh process: `node --expose-gc --import tsx ab-child.ts <request.json>`.
 * The bench's own harness (this checkout's `src/`) runs against the Lunation packages of the tree the request
 * names: a module hook sends the harness's `@lunation/*` imports to that tree's built `dist/`, so both sides run
 * the same harness and differ only in Lunation. Writes `<request.json>.result.json`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { AbWorkload } from './ab-args.js';

/** What the parent asks a child to do. */
export interface AbChildRequest {
  /** The checkout whose Lunation packages this process loads. */
  tree: string;
  workload: AbWorkload;
  /**
   * `time`: warm up, then timed repetitions (µs per run, wall and CPU); `count`: the warm-up, then each window
   * of work between two calls of `os.getPriority()`, where callgrind dumps its counters
   * (`--dump-before=uv_os_getpriority`): the parent reads each window's instructions from its own dump.
   */
  kind: 'time' | 'count';
  smoke: boolean;
  /** `count` only: W1 runs of `steps` steps each, or W2 batches of 1,000 concurrent runs (`steps` = 3). */
  count?: { warmup: CountWork[]; windows: CountWork[] };
}

/** Some runs of one size: W1 runs of `steps` steps, or W2 batches. */
export interface CountWork {
  steps: number;
  runs: number;
}

/** What a child reports. */
export interface AbChildResult {
  /** Figures by metric name (`time` only). */
  figures: Record<string, number>;
  /** Where each `@lunation/*` import of the harness resolved. */
  loaded: Record<string, string>;
  /** Cores other processes kept busy while this one ran, on average. */
  otherLoad?: number;
  node: string;
}

/** The bench's `src/` directory (this checkout's harness), as a URL prefix. */
const harnessDir = `${pathToFileURL(join(fileURLToPath(import.meta.url), '../..')).href}/`;

/** Sends the harness's `@lunation/*` imports to `tree`'s packages; returns what each resolved to. */
function loadLunationFrom(tree: string): Record<string, string> {
  const registerHooks = (nodeModule as { registerHooks?: typeof nodeModule.registerHooks }).registerHooks;
  if (typeof registerHooks !== 'function') {
    throw new Error(
      `The A/B mode needs module.registerHooks (Node 22.15 or later); this is ${process.version}`,
    );
  }
  const parentURL = pathToFileURL(join(tree, 'bench/package.json')).href;
  const loaded: Record<string, string> = {};
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (!specifier.startsWith('@lunation/') || !context.parentURL?.startsWith(harnessDir)) {
        return nextResolve(specifier, context);
      }
      const resolved = nextResolve(specifier, { ...context, parentURL });
      loaded[specifier] = fileURLToPath(resolved.url);
      return resolved;
    },
  });
  return loaded;
}

/** Throws unless every `@lunation/*` import resolved to a built file of `tree`'s own packages. */
function checkLoaded(tree: string, loaded: Record<string, string>): void {
  if (!loaded['@lunation/runtime']) throw new Error('The harness never imported @lunation/runtime');
  for (const [name, file] of Object.entries(loaded)) {
    if (!file.startsWith(join(tree, 'packages/')) || !/\/dist\/.+\.js$/.test(file)) {
      throw new Error(`${name} resolved to ${file}, not to the built dist/ of ${tree}`);
    }
  }
}

async function main(file: string): Promise<void> {
  const request = JSON.parse(readFileSync(file, 'utf8')) as AbChildRequest;
  const loaded = loadLunationFrom(request.tree);
  // Imported only now, so that the hook sees the harness's imports.
  const { runAbWorkload } = await import('./ab-workloads.js');
  const { cpuSnapshot, otherLoad } = await import('../contention.js');
  const cpu = cpuSnapshot();
  const figures = await runAbWorkload(request);
  checkLoaded(request.tree, loaded);
  const load = otherLoad(cpu);
  const result: AbChildResult = {
    figures,
    loaded,
    node: process.version,
    ...(load === undefined ? {} : { otherLoad: load }),
  };
  writeFileSync(`${file}.result.json`, JSON.stringify(result));
}

const file = process.argv[2];
if (!file) throw new Error('Usage: ab-child.ts <request.json>');
await main(file);
// A store's client may keep handles open; the result is written.
process.exit(0);
