import { systemIds } from '@lunation/contract';

/**
 * A new unique id from {@link systemIds}: a random per-process UUID plus a counter (unique across processes,
 * guessable within one: never a secret). For code that cannot take an `IdSource`; the runtime's own ids come
 * from its `ids` option.
 */
export function createId(): string {
  return systemIds.id();
}
