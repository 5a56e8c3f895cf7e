export { MemoryBackend } from './memory-backend.js';
export { MemoryStore, type MemoryStoreOptions } from './memory-store.js';
