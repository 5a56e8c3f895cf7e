/** The fleet test's size and disturbances, from the environment; the defaults are CI's (a few minutes per backend). */
export const fleetSettings = {
  seed: Number(process.env.LUNATION_FLEET_SEED ?? Math.floor(Math.random() * 2 ** 31)),
  /** Threads, each with a first run; follow-ups add runs. */
  runs: Number(process.env.LUNATION_FLEET_RUNS ?? 40),
  /** Backends whose name contains one of these (comma-separated); empty: every backend. */
  backends: (process.env.LUNATION_FLEET_BACKENDS ?? '').split(',').filter(Boolean),
  workers: Number(process.env.LUNATION_FLEET_WORKERS ?? 3),
  concurrency: Number(process.env.LUNATION_FLEET_CONCURRENCY ?? 4),
  /** Threads driven at once by the test's users. */
  inFlight: Number(process.env.LUNATION_FLEET_IN_FLIGHT ?? 12),
  /** The time between two disturbances (a kill or a stall) is drawn from this range. */
  killMinMs: Number(process.env.LUNATION_FLEET_KILL_MIN_MS ?? 800),
  killMaxMs: Number(process.env.LUNATION_FLEET_KILL_MAX_MS ?? 2_000),
  leaseTtlMs: Number(process.env.LUNATION_FLEET_LEASE_TTL_MS ?? 3_000),
  /** The share of disturbances that stall a worker (SIGSTOP, later SIGCONT) instead of killing it. */
  stalls: Number(process.env.LUNATION_FLEET_STALLS ?? 0.5),
  /** The share of stalls that outlast the lease (1.3–2.5 × its TTL); the others last 0.2–0.8 × the TTL. */
  longStalls: Number(process.env.LUNATION_FLEET_LONG_STALLS ?? 0.75),
  /** The share of disturbances that kill or stall one of the two HTTP fronts instead of a worker. */
  frontDisturbances: Number(process.env.LUNATION_FLEET_FRONTS ?? 0.3),
  /** How long a user waits for a front's answer (or a stream's next byte) before retrying on the other front. */
  requestTimeoutMs: Number(process.env.LUNATION_FLEET_REQUEST_TIMEOUT_MS ?? 8_000),
  /** CPU hog processes spinning beside the workers; 0: none. */
  cpuHogs: Number(process.env.LUNATION_FLEET_CPU_HOG ?? 1),
  /** The share of time a hog spins (in bursts of this share of a 2 s period); 1: all the time. */
  cpuHogDuty: Number(process.env.LUNATION_FLEET_CPU_HOG_DUTY ?? 0.5),
  /** The share of event appends a worker fails (before or after appending: a retryable `store-unavailable`). */
  appendFailureRate: Number(process.env.LUNATION_FLEET_APPEND_FAILURE_RATE ?? 0.03),
  /** The share of runs cancelled through the other front: while running, while waiting for an approval, or after their end. */
  cancels: Number(process.env.LUNATION_FLEET_CANCELS ?? 0.25),
  /** The share of threads that get a second message (a second run) after their first run ends. */
  followUps: Number(process.env.LUNATION_FLEET_FOLLOW_UPS ?? 0.3),
  /** How long a user waits for a run to end: this plus 15 s per planned step. */
  runTimeoutMs: Number(process.env.LUNATION_FLEET_RUN_TIMEOUT_MS ?? 45_000),
  /** The whole test's time limit per backend (a 2,000-run fleet on a starved machine needs more than the hour). */
  testTimeoutMs: Number(process.env.LUNATION_FLEET_TEST_TIMEOUT_MS ?? 3_600_000),
};

export type FleetSettings = typeof fleetSettings;
