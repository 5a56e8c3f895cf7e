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
 * The real source: ids are a random per-process prefix (96 bits, 21 lowercase base-36 characters) plus a counter
 * (unique across processes, cheap to make, guessable within a process: never a secret), numbers come from
 * `Math.random()`. The default wherever an `IdSource` can be injected. Ids are short because a run stores them
 * many times over (run, message, call and ledger ids): a UUID prefix made each 15 characters longer.
 */
export const systemIds: IdSource = Object.freeze({
  id(): string {
    prefix ??= randomPrefix();
    counter++;
    return prefix + counter.toString(36);
  },
  random: () => Math.random(),
});

/** Three random 32-bit words, each as 7 base-36 digits, and a dash. */
function randomPrefix(): string {
  let text = '';
  for (const word of globalThis.crypto.getRandomValues(new Uint32Array(3))) {
    text += word.toString(36).padStart(7, '0');
  }
  return `${text}-`;
}
