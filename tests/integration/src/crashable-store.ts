import type { LunationStore } from '@lunation/contract';

type StoreMethod = Exclude<keyof LunationStore, 'kind'>;

export interface CrashPoint {
  method: StoreMethod;
  /** Which calls of `method` to crash on. @default every call */
  when?: (argument: unknown) => boolean;
  /** `before`: the call never reaches the store; `after`: it is applied, but its answer never returns. */
  at: 'before' | 'after';
}

/**
 * A store as a process sees it that can die: after `crash()` (or at a crash point) every call of this
 * process hangs forever, so nothing it does afterwards reaches the store, as after a SIGKILL. The store itself
 * (shared with the "next process") is untouched.
 */
export function crashableStore(store: LunationStore) {
  let dead = false;
  const points: CrashPoint[] = [];
  let onCrash: (() => void) | undefined;
  const crashed = new Promise<void>((resolve) => {
    onCrash = resolve;
  });
  const die = () => {
    dead = true;
    onCrash?.();
  };
  const hang = () => new Promise<never>(() => {});
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function' || property === 'close') return value;
      return (...args: unknown[]) => {
        if (dead) return hang();
        const point = points.find(
          (candidate) => candidate.method === property && (candidate.when?.(args[0]) ?? true),
        );
        if (point?.at === 'before') {
          die();
          return hang();
        }
        const result = (value as (...callArgs: unknown[]) => Promise<unknown>).apply(target, args);
        if (point?.at === 'after') {
          return result.then(() => {
            die();
            return hang();
          });
        }
        return result;
      };
    },
  });
  return {
    store: proxy as LunationStore,
    /** Dies now. */
    crash: die,
    /** Dies at the first call matching the point. */
    crashAt(point: CrashPoint) {
      points.push(point);
    },
    /** Resolves once dead. */
    crashed,
  };
}
