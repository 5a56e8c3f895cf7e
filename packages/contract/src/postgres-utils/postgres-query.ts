/**
 * One SQL statement on one PostgreSQL connection, with `$1`-style parameters; without `values`, the text may
 * hold several statements. Rows come back as objects. A node-postgres `PoolClient` fits
 * (`(text, values) => client.query(text, values)`), as does a kysely connection
 * (`(text, values) => connection.executeQuery(CompiledQuery.raw(text, values ?? []))`).
 */
export type PostgresQuery = (
  text: string,
  values?: readonly unknown[],
) => Promise<{ rows: readonly Record<string, unknown>[] }>;

/** `name` as a quoted SQL identifier (case is kept). */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** SQL for epoch milliseconds on the server's clock, which leases, locks, delays and expiries use. */
export const serverNowMs = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint';
