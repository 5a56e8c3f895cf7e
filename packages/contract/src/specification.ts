import type { Dispatcher } from './dispatch.js';
import { LunationError } from './errors.js';
import type { ModelProvider } from './model.js';
import type { LunationStore } from './store.js';

/**
 * The version of each adapter interface this release of the contract defines: what a `ModelProvider`, a
 * `LunationStore` and a `Dispatcher` declare as their `specificationVersion`.
 *
 * @remarks A change that breaks adapters (a new message or stream part kind, a new required method, a
 * stricter rule a store must enforce) bumps the kind's version (`v1` → `v2`); adapters then declare the new
 * version once they handle it. CONTRIBUTING.md ("Contract changes") has the policy.
 */
export const specificationVersions = {
  model: 'v1',
  store: 'v2',
  dispatcher: 'v3',
} as const satisfies {
  model: ModelProvider['specificationVersion'];
  store: LunationStore['specificationVersion'];
  dispatcher: Dispatcher['specificationVersion'];
};

/** A kind of adapter with a versioned interface: `model`, `store` or `dispatcher`. */
export type SpecificationKind = keyof typeof specificationVersions;

/**
 * Checks that an adapter declares the specification version this contract defines for its kind, before
 * anything runs on it; a `specification-mismatch` LunationError naming both versions otherwise.
 *
 * @param name How the error names the adapter, e.g. `model "gpt"` or `store "redis"`.
 */
export function assertSpecificationVersion(
  kind: SpecificationKind,
  adapter: { readonly specificationVersion?: unknown },
  name: string,
): void {
  const expected = specificationVersions[kind];
  const actual = adapter.specificationVersion;
  if (actual === expected) return;
  const declared = actual === undefined ? 'no specificationVersion' : `specification ${String(actual)}`;
  throw new LunationError(
    'specification-mismatch',
    `The ${name} implements ${declared}, but this runtime's contract defines ${kind} specification ${expected}; use a version of the adapter built for ${kind} ${expected}`,
    { details: { kind, expected, actual: actual === undefined ? null : String(actual) } },
  );
}
