import type { LocalDispatcher } from '@lunation/fleet';
import { runDispatcherConformance } from '../run-dispatcher-conformance.js';
import { breakages } from './broken-dispatchers.js';

/** How many files share the broken dispatchers, so that vitest runs them side by side. */
export const brokenDispatcherFiles = 5;

/** Runs the conformance kit once for each broken LocalDispatcher of one file's share. */
export function runBrokenDispatchers(file: number): void {
  const entries = Object.entries(breakages).filter((_, index) => index % brokenDispatcherFiles === file);
  for (const [name, build] of entries) {
    runDispatcherConformance({
      name: `broken: ${name}`,
      tsconfig: false,
      workerProcess: false,
      create: async (policy) => build(policy),
      createSibling: async (dispatcher, policy) =>
        build({ ...policy, backend: (dispatcher as LocalDispatcher).backend }),
      redeliveryMs: 1_000,
    });
  }
}
