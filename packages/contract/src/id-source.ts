/**
 * Where the runtime, the fleet, stores and dispatchers get ids and random numbers. {@link systemIds} is the real
 * one; a simulation injects a seeded source so that the same seed gives the same ids and the same choices.
 */
export interface IdSource {
  /** A new id, unique across processes (for a seeded source: unique within its simulation). */
  id(): string;
  /** A number in `[0, 1)`, as `Math.random()`: for jitter and random choices, never for secrets. */
  random(): number;
}

let prefix: string | undefined;
let counter = 0;

/**
 * The real source: ids are a random per-process UUID plus a counter (unique across processes, cheap to make,
 * guessable within a process: never a secret), numbers come from `Math.random()`. The default wherever an
 * `IdSource` can be injected.
 */
export const systemIds: IdSource = Object.freeze({
  id(): string {
    prefix ??= `${globalThis.crypto.randomUUID()}-`;
    counter++;
    return prefix + counter.toString(36);
  },
  random: () => Math.random(),
});
