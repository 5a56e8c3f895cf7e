/** Runs the conformance suite once per broken MemoryStore; every one of them must fail somewhere. */
import { runStoreConformance } from '@lunation/store-testkit';
import { MemoryStore } from '../memory-store.js';
import { breakages } from './broken-stores.js';

for (const [name, breakStore] of Object.entries(breakages)) {
  const open = (store: MemoryStore): MemoryStore => {
    breakStore(store);
    return store;
  };
  runStoreConformance({
    name: `broken: ${name}`,
    // Their behaviour is broken, not their types (memory-store.test.ts typechecks the package).
    tsconfig: false,
    create: async () => open(new MemoryStore()),
    createSibling: async (store) => open(new MemoryStore({ backend: (store as MemoryStore).backend })),
  });
}
