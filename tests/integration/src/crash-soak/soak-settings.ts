/** The soak's size and seed, from the environment; the defaults are the CI size (about two minutes). */
export interface SoakSettings {
  /** `LUNATION_SOAK_SEED`; random when unset (and printed). */
  seed: number;
  /** `LUNATION_SOAK_RUNS`: runs per store. */
  runs: number;
  /** `LUNATION_SOAK_STORES`: comma-separated backend names. */
  stores: string[];
  /** `LUNATION_SOAK_BATCH_SIZE`: runs one child process drives at once. */
  batchSize: number;
  /** `LUNATION_SOAK_PARALLEL`: batches (so child processes) running at the same time. */
  parallel: number;
  /** `LUNATION_SOAK_BATCH`: run only this batch (to replay a failure). */
  onlyBatch: number | undefined;
  /** `LUNATION_SOAK_LEASE_TTL_MS`: the child runtimes' lease time-to-live. */
  leaseTtlMs: number;
  /** `LUNATION_SOAK_SAME_OWNER=1`: every process of a batch uses the same lease owner. */
  sameOwner: boolean;
  /**
   * `LUNATION_SOAK_TWIN_EVERY`: every n-th batch (0: none) runs beside a live twin process sharing its owner,
   * with `twinLeaseTtlMs` leases.
   */
  twinEvery: number;
  /** `LUNATION_SOAK_TWIN_LEASE_TTL_MS`: the lease ttl of twin batches (a takeover needs three quarters of it unrenewed). */
  twinLeaseTtlMs: number;
  /** `LUNATION_SOAK_MIN_KILLS`: every run is killed at least this often (at its next model call first). */
  minKillsPerRun: number;
}

function integer(name: string, fallback: number, minimum: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < minimum)
    throw new Error(`${name} must be an integer >= ${minimum}, got "${raw}"`);
  return value;
}

export function soakSettings(available: readonly string[]): SoakSettings {
  const stores = (process.env.LUNATION_SOAK_STORES ?? available.join(','))
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  for (const store of stores) {
    if (!available.includes(store))
      throw new Error(`LUNATION_SOAK_STORES names "${store}"; the soak knows ${available.join(', ')}`);
  }
  const batch = process.env.LUNATION_SOAK_BATCH;
  return {
    seed: integer('LUNATION_SOAK_SEED', Math.floor(Math.random() * 2 ** 31), 0),
    runs: integer('LUNATION_SOAK_RUNS', 40, 1),
    stores,
    batchSize: integer('LUNATION_SOAK_BATCH_SIZE', 5, 1),
    parallel: integer('LUNATION_SOAK_PARALLEL', 2, 1),
    onlyBatch: batch === undefined || batch === '' ? undefined : integer('LUNATION_SOAK_BATCH', 0, 0),
    leaseTtlMs: integer('LUNATION_SOAK_LEASE_TTL_MS', 300, 50),
    sameOwner: process.env.LUNATION_SOAK_SAME_OWNER === '1',
    twinEvery: integer('LUNATION_SOAK_TWIN_EVERY', 2, 0),
    twinLeaseTtlMs: integer('LUNATION_SOAK_TWIN_LEASE_TTL_MS', 6_000, 300),
    minKillsPerRun: integer('LUNATION_SOAK_MIN_KILLS', 2, 0),
  };
}

/** The command that replays the soak (or one batch of it) on one store. */
export function replayCommand(settings: SoakSettings, store: string, batch?: number): string {
  const variables = [
    `LUNATION_SOAK_SEED=${settings.seed}`,
    `LUNATION_SOAK_RUNS=${settings.runs}`,
    `LUNATION_SOAK_STORES=${store}`,
    `LUNATION_SOAK_BATCH_SIZE=${settings.batchSize}`,
    ...(batch === undefined ? [] : [`LUNATION_SOAK_BATCH=${batch}`]),
    ...(settings.leaseTtlMs === 300 ? [] : [`LUNATION_SOAK_LEASE_TTL_MS=${settings.leaseTtlMs}`]),
    ...(settings.minKillsPerRun === 2 ? [] : [`LUNATION_SOAK_MIN_KILLS=${settings.minKillsPerRun}`]),
    ...(settings.sameOwner ? ['LUNATION_SOAK_SAME_OWNER=1'] : []),
    ...(settings.twinEvery === 2 ? [] : [`LUNATION_SOAK_TWIN_EVERY=${settings.twinEvery}`]),
    ...(settings.twinLeaseTtlMs === 6_000
      ? []
      : [`LUNATION_SOAK_TWIN_LEASE_TTL_MS=${settings.twinLeaseTtlMs}`]),
  ];
  return `${variables.join(' ')} pnpm vitest run --project integration crash-soak`;
}
