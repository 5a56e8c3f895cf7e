import { serverNowMs } from '@lunation/contract/postgres-utils';
import type { DispatchContext } from './dispatch-context.js';
import { inTransaction } from './postgres-connection.js';

/** The first key of the maintenance lock, so one instance of a schema maintains it at a time: "LnMt". */
const maintenanceLockKey = 0x4c6e4d74;
/** Rows handled per kind per pass. */
const batch = 1_000;

/** What one maintenance pass did. */
export interface MaintenanceResult {
  /** False when another instance was maintaining the schema. */
  ran: boolean;
  /** Expired run event logs deleted. */
  expiredLogs: number;
  /** Acknowledged ids past the dedupe window forgotten. */
  forgottenIds: number;
  /** Threads with submissions but no job (pg-boss deleted it) woken again. */
  rewoken: number;
}

/**
 * The periodic cleanup every instance runs (one at a time per schema): deletes run event logs past their expiry,
 * forgets acknowledged ids past the dedupe window, and wakes threads that have submissions but no pg-boss job
 * (pg-boss deletes jobs left unclaimed past their retention, and fails jobs active past its 24 h expiry).
 */
export async function maintain(context: DispatchContext): Promise<MaintenanceResult> {
  const { s, schema, jobs, policy, channels } = context;
  return inTransaction(context.pool, async (transaction) => {
    const { rows: locked } = await transaction.query(
      'SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS ok',
      [maintenanceLockKey, schema],
    );
    if (locked[0].ok !== true) return { ran: false, expiredLogs: 0, forgottenIds: 0, rewoken: 0 };
    const { rows: logs } = await transaction.query(
      `WITH expired AS (
         DELETE FROM ${s}.dispatch_run_logs WHERE expires_at <= ${serverNowMs} AND run_id IN (
           SELECT run_id FROM ${s}.dispatch_run_logs WHERE expires_at <= ${serverNowMs} LIMIT ${batch}
         ) RETURNING run_id
       ), events AS (
         DELETE FROM ${s}.dispatch_run_events WHERE run_id IN (SELECT run_id FROM expired)
       )
       SELECT count(*)::int AS deleted FROM expired`,
    );
    const { rowCount: forgotten } = await transaction.query(
      `DELETE FROM ${s}.dispatch_acknowledged WHERE ctid IN (
         SELECT ctid FROM ${s}.dispatch_acknowledged WHERE acknowledged_at <= ${serverNowMs} - $1 LIMIT ${batch}
       )`,
      [policy.dedupeWindowMs],
    );
    const { rows: stranded } = await transaction.query(
      `SELECT t.thread_id, t.resource_id FROM ${s}.dispatch_threads t
       WHERE t.claim_token IS NULL AND t.dead_at IS NULL
         AND EXISTS (SELECT 1 FROM ${s}.dispatch_inbox i WHERE i.thread_id = t.thread_id)
         AND NOT EXISTS (
           SELECT 1 FROM ${s}.job j WHERE j.name = $1 AND j.singleton_key = t.thread_id AND j.state <= 'active'
         )
       LIMIT ${batch} FOR UPDATE OF t SKIP LOCKED`,
      [jobs.queue],
    );
    let rewoken = 0;
    for (const thread of stranded) {
      if (
        await jobs.wake(
          transaction,
          thread.thread_id as string,
          (thread.resource_id as string | null) ?? undefined,
        )
      ) {
        rewoken++;
      }
    }
    if (rewoken > 0) transaction.notify(channels.wake);
    return { ran: true, expiredLogs: logs[0].deleted as number, forgottenIds: forgotten ?? 0, rewoken };
  });
}
