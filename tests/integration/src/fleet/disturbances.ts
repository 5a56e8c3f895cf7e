import type { SeededRandom } from '../../fixtures/seeded-random.js';
import type { FrontPool } from './front-pool.js';
import type { WorkerPool } from './worker-pool.js';

/** How the fleet is disturbed: how often, how long stalls last, which share stalls rather than kills. */
export interface DisturbanceOptions {
  minMs: number;
  maxMs: number;
  leaseTtlMs: number;
  /** The share of disturbances that are stalls. */
  stalls: number;
  /** The share of stalls that outlast the lease. */
  longStalls: number;
  /** The share of disturbances that hit a front (killed, or stalled for 1–3 × the users' request timeout). */
  fronts: number;
  /** How long a user waits for a front's answer before retrying on the other. */
  requestTimeoutMs: number;
}

/**
 * Disturbs the pool's workers and the fronts until the returned `stop()`: every `minMs`..`maxMs` a seeded choice
 * SIGKILLs a running worker (unless a replacement is still starting) or stalls one, past its lease TTL or shorter,
 * then lets it go on; or (`fronts` of the time) kills or stalls a front. At least one worker and one front always
 * run: the last running one is left alone.
 */
export function disturb(
  pool: WorkerPool,
  fronts: FrontPool,
  random: SeededRandom,
  options: DisturbanceOptions,
): { stop(): Promise<void> } {
  let stopping = false;
  let wake: () => void = () => {};
  const stalls: Promise<void>[] = [];
  const loop = (async () => {
    while (!stopping) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, random.integer(options.minMs, options.maxMs));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (stopping) break;
      if (random.chance(options.fronts)) {
        const up = fronts.running();
        if (up.length < 2) continue;
        const victim = random.pick(up);
        if (random.chance(0.5)) {
          const ms = Math.round(options.requestTimeoutMs * (1 + random.next() * 2));
          stalls.push(fronts.stall(victim, ms));
        } else {
          fronts.kill(victim);
        }
        continue;
      }
      const running = pool.running();
      if (running.length < 2) continue;
      const victim = random.pick(running);
      if (random.chance(options.stalls)) {
        const long = random.chance(options.longStalls);
        const ms = Math.round(
          options.leaseTtlMs * (long ? 1.3 + random.next() * 1.2 : 0.2 + random.next() * 0.6),
        );
        stalls.push(pool.stall(victim, ms, long));
      } else if (pool.starting() === 0) {
        pool.kill(victim);
      }
    }
  })();
  return {
    async stop() {
      stopping = true;
      wake();
      await loop;
    },
  };
}
