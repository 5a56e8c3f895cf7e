import { migratePostgresSchema, quoteIdentifier } from '@lunation/contract/postgres-utils';
import type { PostgresDispatcherClient } from './postgres-connection.js';

/** Kysely's bookkeeping tables in the dispatcher's schema, named apart from `@lunation/store-postgres`'s. */
export const migrationTableName = 'lunation_dispatch_migration';
export const migrationLockTableName = 'lunation_dispatch_migration_lock';

/**
 * The first key of the dispatcher's advisory lock (`pg_advisory_lock(key, hashtext(schema))`): "LnDp" in ASCII.
 * The second key is the schema's hash, so dispatchers of different schemas migrate independently.
 */
export const advisoryLockKey = 0x4c6e4470;

/** The tables the contract adds to pg-boss's: inboxes, claims and dead letters, counters, cancels, run events. */
function initialTables(s: string): string {
  return `
CREATE TABLE ${s}.dispatch_threads (
  thread_id text COLLATE "C" PRIMARY KEY,
  resource_id text COLLATE "C",
  failures integer NOT NULL DEFAULT 0,
  lost_claims integer NOT NULL DEFAULT 0,
  job_id uuid,
  job_attempt integer,
  claim_token text COLLATE "C",
  worker_id text,
  claimed_at bigint,
  lock_ms bigint,
  lock_expires_at bigint,
  dead_at bigint,
  dead_attempts integer,
  dead_error json,
  dead_job_id uuid
);
CREATE INDEX dispatch_threads_lock_expiry ON ${s}.dispatch_threads (lock_expires_at)
  WHERE lock_expires_at IS NOT NULL;
CREATE INDEX dispatch_threads_claimed ON ${s}.dispatch_threads (resource_id) WHERE claim_token IS NOT NULL;
CREATE INDEX dispatch_threads_dead ON ${s}.dispatch_threads (dead_at, thread_id) WHERE dead_at IS NOT NULL;

CREATE TABLE ${s}.dispatch_inbox (
  thread_id text COLLATE "C" NOT NULL,
  submission_id text COLLATE "C" NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  resource_id text COLLATE "C",
  entry json NOT NULL,
  submitted_at bigint NOT NULL,
  PRIMARY KEY (thread_id, submission_id)
);
CREATE INDEX dispatch_inbox_order ON ${s}.dispatch_inbox (thread_id, seq);
CREATE INDEX dispatch_inbox_resource ON ${s}.dispatch_inbox (resource_id) WHERE resource_id IS NOT NULL;

CREATE TABLE ${s}.dispatch_acknowledged (
  thread_id text COLLATE "C" NOT NULL,
  submission_id text COLLATE "C" NOT NULL,
  acknowledged_at bigint NOT NULL,
  PRIMARY KEY (thread_id, submission_id)
);
CREATE INDEX dispatch_acknowledged_at ON ${s}.dispatch_acknowledged (acknowledged_at);

CREATE TABLE ${s}.dispatch_counters (
  name text COLLATE "C" NOT NULL,
  shard smallint NOT NULL,
  value bigint NOT NULL,
  PRIMARY KEY (name, shard)
);

CREATE TABLE ${s}.dispatch_cancels (
  thread_id text COLLATE "C" PRIMARY KEY,
  id text NOT NULL,
  run_id text,
  reason text NOT NULL,
  requested_at bigint NOT NULL
);

CREATE TABLE ${s}.dispatch_run_logs (
  run_id text COLLATE "C" PRIMARY KEY,
  last_seq bigint NOT NULL,
  ended_seq bigint,
  expires_at bigint
);
CREATE INDEX dispatch_run_logs_expiry ON ${s}.dispatch_run_logs (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE ${s}.dispatch_run_events (
  run_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  event json NOT NULL,
  PRIMARY KEY (run_id, seq)
);
`;
}

/**
 * Fenced run event logs: each log keeps the highest lease fence it was given and the `seq` of the last event it
 * took under it; appending and ending are functions, so each is one statement that checks and applies the rules
 * of the contract's RunEventLog under the log's row lock. Status 0: done (with the ids appended), 1: the log is
 * ended, 2: the fence is lower than the log's (with the log's fence).
 */
function runEventFences(s: string): string {
  return `
ALTER TABLE ${s}.dispatch_run_logs ADD COLUMN fence bigint, ADD COLUMN fence_seq bigint;

CREATE FUNCTION ${s}.dispatch_append_events(
  p_run_id text, p_events json, p_fence bigint, p_max_events bigint, p_channel text
) RETURNS TABLE (status smallint, log_fence bigint, ids bigint[])
LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  v_log ${s}.dispatch_run_logs%ROWTYPE;
  v_position bigint;
  v_seq bigint;
  v_last bigint;
  v_ids bigint[] := '{}';
  v_event json;
BEGIN
  INSERT INTO ${s}.dispatch_run_logs (run_id, last_seq) VALUES (p_run_id, 0) ON CONFLICT (run_id) DO NOTHING;
  SELECT * INTO v_log FROM ${s}.dispatch_run_logs WHERE run_id = p_run_id FOR UPDATE;
  IF v_log.expires_at IS NOT NULL AND v_log.expires_at <= v_now THEN
    -- The ended log expired: it is forgotten, fence and all, and this append starts a new one.
    DELETE FROM ${s}.dispatch_run_events WHERE run_id = p_run_id;
    v_log.last_seq := 0;
    v_log.fence := NULL;
    v_log.fence_seq := NULL;
  ELSIF v_log.ended_seq IS NOT NULL THEN
    RETURN QUERY SELECT 1::smallint, v_log.fence, NULL::bigint[];
    RETURN;
  END IF;
  IF p_fence IS NOT NULL THEN
    IF v_log.fence IS NOT NULL AND p_fence < v_log.fence THEN
      RETURN QUERY SELECT 2::smallint, v_log.fence, NULL::bigint[];
      RETURN;
    END IF;
    v_position := CASE WHEN v_log.fence = p_fence THEN coalesce(v_log.fence_seq, -1) ELSE -1 END;
  END IF;
  v_last := v_log.last_seq;
  FOR v_event IN SELECT value FROM json_array_elements(p_events) LOOP
    IF p_fence IS NOT NULL THEN
      v_seq := (v_event->>'seq')::bigint;
      CONTINUE WHEN v_seq <= v_position;
      v_position := v_seq;
    END IF;
    v_last := v_last + 1;
    INSERT INTO ${s}.dispatch_run_events (run_id, seq, event) VALUES (p_run_id, v_last, v_event);
    v_ids := v_ids || v_last;
  END LOOP;
  UPDATE ${s}.dispatch_run_logs SET last_seq = v_last, ended_seq = NULL, expires_at = NULL,
    fence = coalesce(p_fence, v_log.fence),
    fence_seq = CASE WHEN p_fence IS NULL THEN v_log.fence_seq ELSE nullif(v_position, -1) END
  WHERE run_id = p_run_id;
  IF cardinality(v_ids) > 0 THEN
    DELETE FROM ${s}.dispatch_run_events WHERE run_id = p_run_id AND seq <= v_last - p_max_events;
    PERFORM pg_notify(p_channel, v_last::text);
  END IF;
  RETURN QUERY SELECT 0::smallint, NULL::bigint, v_ids;
END
$fn$;

CREATE FUNCTION ${s}.dispatch_end_events(
  p_run_id text, p_ttl_ms bigint, p_fence bigint, p_channel text
) RETURNS TABLE (status smallint, log_fence bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
  v_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  v_log ${s}.dispatch_run_logs%ROWTYPE;
BEGIN
  INSERT INTO ${s}.dispatch_run_logs (run_id, last_seq) VALUES (p_run_id, 0) ON CONFLICT (run_id) DO NOTHING;
  SELECT * INTO v_log FROM ${s}.dispatch_run_logs WHERE run_id = p_run_id FOR UPDATE;
  IF v_log.expires_at IS NOT NULL AND v_log.expires_at <= v_now THEN
    -- Ending a log whose expiry has passed ends a new, empty one.
    DELETE FROM ${s}.dispatch_run_events WHERE run_id = p_run_id;
    v_log.last_seq := 0;
    v_log.fence := NULL;
    v_log.fence_seq := NULL;
  END IF;
  IF p_fence IS NOT NULL AND v_log.fence IS NOT NULL AND p_fence < v_log.fence THEN
    RETURN QUERY SELECT 2::smallint, v_log.fence;
    RETURN;
  END IF;
  UPDATE ${s}.dispatch_run_logs SET last_seq = v_log.last_seq, ended_seq = v_log.last_seq,
    expires_at = v_now + p_ttl_ms, fence = coalesce(p_fence, v_log.fence),
    fence_seq = CASE WHEN p_fence IS NULL OR p_fence = v_log.fence THEN v_log.fence_seq END
  WHERE run_id = p_run_id;
  PERFORM pg_notify(p_channel, v_log.last_seq::text);
  RETURN QUERY SELECT 0::smallint, NULL::bigint;
END
$fn$;
`;
}

/**
 * Cancel requests per run: a thread holds one request per run named (`run_key`: the run id, `''` for none), so
 * a request for one run no longer replaces another run's. Pending requests are kept, under their run.
 */
function cancelsPerRun(s: string): string {
  return `
ALTER TABLE ${s}.dispatch_cancels ADD COLUMN run_key text COLLATE "C" NOT NULL DEFAULT '';
UPDATE ${s}.dispatch_cancels SET run_key = coalesce(run_id, '');
ALTER TABLE ${s}.dispatch_cancels DROP CONSTRAINT dispatch_cancels_pkey;
ALTER TABLE ${s}.dispatch_cancels ADD PRIMARY KEY (thread_id, run_key);
`;
}

/**
 * Every version of the dispatcher's own tables, oldest first, as SQL. Forward-only: a released migration never
 * changes; a change is a new entry. pg-boss migrates its own tables (in the same schema) when it starts.
 */
export function dispatchMigrations(schema: string): Record<string, string> {
  const s = quoteIdentifier(schema);
  return {
    '001_initial': initialTables(s),
    '002_run_event_fences': runEventFences(s),
    '003_cancels_per_run': cancelsPerRun(s),
  };
}

/** The newest version of the dispatcher's own tables. */
export const latestSchemaVersion = Object.keys(dispatchMigrations('lunation_dispatch')).sort().at(-1)!;

/**
 * Brings `schema` up to date on one connection, holding the schema's advisory lock so that processes starting
 * at once migrate it once: the others wait, then find nothing to do. `alsoUnderLock` runs before the lock is
 * released (pg-boss's install and its queue). `migration-failed` leaves the previous version.
 */
export function migrate(
  client: PostgresDispatcherClient,
  schema: string,
  alsoUnderLock: () => Promise<void>,
): Promise<void> {
  return migratePostgresSchema((text, values) => client.query(text, values as unknown[] | undefined), {
    schema,
    migrations: dispatchMigrations(schema),
    migrationTable: migrationTableName,
    lockTable: migrationLockTableName,
    lockKey: advisoryLockKey,
    owner: '@lunation/dispatch-postgres',
    alsoUnderLock,
  });
}
