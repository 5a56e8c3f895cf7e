import { runStoreConformance } from '@lunation/store-testkit';
import { MemoryStore } from './memory-store.js';

runStoreConformance({
  name: 'memory',
  create: async () => new MemoryStore(),
  createSibling: async (store) => new MemoryStore({ backend: (store as MemoryStore).backend }),
});
