import {
  migratePostgresSchema,
  type PostgresMigrationOptions,
  type PostgresQuery,
  postgresSchemaVersion,
  quoteIdentifier,
  serverNowMs,
} from '@lunation/contract/postgres-utils';
import { CompiledQuery, type Kysely } from 'kysely';

/** The bookkeeping tables inside the store's schema (kysely's Migrator's), named apart from an application's. */
export const migrationTableName = 'lunation_migration';
export const migrationLockTableName = 'lunation_migration_lock';

/**
 * The first key of the store's advisory locks (`pg_advisory_lock(key, hashtext(schema))`): "Luna" in ASCII.
 * The second key is the schema's hash, so stores of different schemas migrate independently.
 */
export const advisoryLockKey = 0x4c756e61;

// Every SQL text below takes the schema as `s`, an already quoted identifier, so the functions never depend on
// the caller's search_path.

function initialTables(s: string): string {
  return `
CREATE TABLE ${s}.threads (
  id text COLLATE "C" PRIMARY KEY,
  resource_id text COLLATE "C",
  metadata jsonb NOT NULL,
  message_count bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  state jsonb
);
CREATE INDEX threads_created ON ${s}.threads (created_at, id);
CREATE INDEX threads_resource ON ${s}.threads (resource_id, created_at, id);

CREATE TABLE ${s}.messages (
  thread_id text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  message jsonb NOT NULL,
  run_id text COLLATE "C",
  created_at bigint NOT NULL,
  PRIMARY KEY (thread_id, seq)
);

CREATE TABLE ${s}.runs (
  run_id text COLLATE "C" PRIMARY KEY,
  thread_id text COLLATE "C" NOT NULL,
  record jsonb NOT NULL,
  created_at bigint NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX runs_thread ON ${s}.runs (thread_id, created_at, seq);

CREATE TABLE ${s}.tool_executions (
  run_id text COLLATE "C" NOT NULL,
  tool_call_id text COLLATE "C" NOT NULL,
  thread_id text COLLATE "C" NOT NULL,
  tool_name text NOT NULL,
  idempotency_key text NOT NULL,
  status text NOT NULL CHECK (status IN ('in-flight', 'completed')),
  attempts integer NOT NULL,
  result jsonb,
  started_at bigint NOT NULL,
  completed_at bigint,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (run_id, tool_call_id)
);
CREATE INDEX tool_executions_thread ON ${s}.tool_executions (thread_id);

CREATE TABLE ${s}.leases (
  thread_id text COLLATE "C" PRIMARY KEY,
  token bigint NOT NULL,
  owner text NOT NULL,
  run_id text NOT NULL,
  expires_at bigint
);
`;
}

/**
 * The store's writes as functions, one statement (and so one round trip and one transaction) per call. A
 * rejection raises a `LN...` SQLSTATE, which rolls back everything the call wrote. Locks are taken in one
 * order everywhere (thread row, lease row, ledger rows), so concurrent calls never deadlock each other.
 */
function storeFunctions(s: string): string {
  return `
CREATE FUNCTION ${s}.commit_checkpoint(
  p_thread_id text, p_expected_count bigint, p_lease_token bigint, p_now bigint, p_messages jsonb,
  p_run_id text, p_run jsonb, p_run_created_at bigint, p_state jsonb, p_tool_executions jsonb,
  p_message_run_id text
) RETURNS bigint LANGUAGE plpgsql AS $lunation$
DECLARE
  v_added bigint := jsonb_array_length(p_messages);
  v_count bigint;
  v_token bigint;
  v_owner text;
  v_entry record;
BEGIN
  -- Locks the thread row: commits of one thread run one after another. A rejection below rolls this back.
  UPDATE ${s}.threads
  SET message_count = message_count + v_added, updated_at = greatest(updated_at, p_now),
    state = coalesce(p_state, state)
  WHERE id = p_thread_id
  RETURNING message_count - v_added INTO v_count;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'LN404', MESSAGE = 'thread not found';
  END IF;
  IF p_lease_token IS NOT NULL THEN
    -- FOR SHARE: a concurrent acquireLease waits for this commit, so a token is never issued mid-commit.
    SELECT token INTO v_token FROM ${s}.leases WHERE thread_id = p_thread_id FOR SHARE;
    IF v_token > p_lease_token THEN
      RAISE EXCEPTION USING ERRCODE = 'LN410', MESSAGE = 'stale lease', DETAIL = v_token::text;
    END IF;
  END IF;
  IF v_count <> p_expected_count THEN
    RAISE EXCEPTION USING ERRCODE = 'LN409', MESSAGE = 'message count differs', DETAIL = v_count::text;
  END IF;
  IF v_added > 0 THEN
    INSERT INTO ${s}.messages (thread_id, seq, message, run_id, created_at)
    SELECT p_thread_id, v_count + m.ordinality, m.value, coalesce(p_message_run_id, p_run_id), p_now
    FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS m;
  END IF;
  IF p_run_id IS NOT NULL THEN
    -- A run keeps the position (created_at, seq) of its first commit; later commits replace the record.
    UPDATE ${s}.runs SET record = p_run WHERE run_id = p_run_id AND thread_id = p_thread_id;
    IF NOT FOUND THEN
      INSERT INTO ${s}.runs (run_id, thread_id, record, created_at)
      VALUES (p_run_id, p_thread_id, p_run, p_run_created_at)
      ON CONFLICT (run_id) DO NOTHING;
      IF NOT FOUND THEN
        SELECT thread_id INTO v_owner FROM ${s}.runs WHERE run_id = p_run_id;
        RAISE EXCEPTION USING ERRCODE = 'LN400', MESSAGE = 'run of another thread',
          DETAIL = json_build_object('runId', p_run_id, 'threadId', v_owner)::text;
      END IF;
    END IF;
  END IF;
  IF p_tool_executions IS NOT NULL THEN
    -- An entry never changes thread: one of another thread rejects the commit, writing nothing.
    FOR v_entry IN
      SELECT e."runId" AS run_id, e."toolCallId" AS tool_call_id
      FROM jsonb_to_recordset(p_tool_executions) AS e("runId" text, "toolCallId" text)
    LOOP
      SELECT t.thread_id INTO v_owner FROM ${s}.tool_executions t
      WHERE t.run_id = v_entry.run_id AND t.tool_call_id = v_entry.tool_call_id;
      IF FOUND AND v_owner <> p_thread_id THEN
        RAISE EXCEPTION USING ERRCODE = 'LN400', MESSAGE = 'tool execution of another thread',
          DETAIL = json_build_object('runId', v_entry.run_id, 'toolCallId', v_entry.tool_call_id,
            'threadId', v_owner)::text;
      END IF;
    END LOOP;
    -- A completed entry is final: it keeps its result.
    INSERT INTO ${s}.tool_executions AS t (run_id, tool_call_id, thread_id, tool_name, idempotency_key, status,
      attempts, result, started_at, completed_at)
    SELECT e."runId", e."toolCallId", p_thread_id, e."toolName", e."idempotencyKey", e.status, e.attempts,
      e.result, e."startedAt", e."completedAt"
    FROM jsonb_to_recordset(p_tool_executions) AS e("runId" text, "toolCallId" text, "toolName" text,
      "idempotencyKey" text, status text, attempts integer, result jsonb, "startedAt" bigint, "completedAt" bigint)
    ON CONFLICT (run_id, tool_call_id) DO UPDATE SET tool_name = excluded.tool_name,
      idempotency_key = excluded.idempotency_key, status = excluded.status, attempts = excluded.attempts,
      result = excluded.result, started_at = excluded.started_at, completed_at = excluded.completed_at
    WHERE t.status <> 'completed';
  END IF;
  RETURN v_count + v_added;
END
$lunation$;

CREATE FUNCTION ${s}.begin_tool_execution(
  p_run_id text, p_tool_call_id text, p_thread_id text, p_tool_name text, p_idempotency_key text,
  p_lease_token bigint, p_now bigint
) RETURNS json LANGUAGE plpgsql AS $lunation$
DECLARE
  v_token bigint;
  v_entry ${s}.tool_executions;
BEGIN
  IF p_lease_token IS NOT NULL THEN
    SELECT token INTO v_token FROM ${s}.leases WHERE thread_id = p_thread_id FOR SHARE;
    IF v_token > p_lease_token THEN
      RAISE EXCEPTION USING ERRCODE = 'LN410', MESSAGE = 'stale lease', DETAIL = v_token::text;
    END IF;
  END IF;
  INSERT INTO ${s}.tool_executions AS t (run_id, tool_call_id, thread_id, tool_name, idempotency_key, status,
    attempts, started_at)
  VALUES (p_run_id, p_tool_call_id, p_thread_id, p_tool_name, p_idempotency_key, 'in-flight', 1, p_now)
  ON CONFLICT (run_id, tool_call_id) DO UPDATE SET attempts = t.attempts + 1
  WHERE t.status = 'in-flight' AND t.thread_id = excluded.thread_id
  RETURNING * INTO v_entry;
  IF NOT FOUND THEN
    -- Completed (returned unchanged), or an entry of another thread.
    SELECT * INTO v_entry FROM ${s}.tool_executions WHERE run_id = p_run_id AND tool_call_id = p_tool_call_id;
    IF v_entry.thread_id <> p_thread_id THEN
      RAISE EXCEPTION USING ERRCODE = 'LN400', MESSAGE = 'tool execution of another thread',
        DETAIL = json_build_object('runId', p_run_id, 'toolCallId', p_tool_call_id, 'threadId', v_entry.thread_id)::text;
    END IF;
  END IF;
  RETURN row_to_json(v_entry);
END
$lunation$;

CREATE FUNCTION ${s}.complete_tool_execution(
  p_run_id text, p_tool_call_id text, p_result jsonb, p_now bigint, p_lease_token bigint
) RETURNS json LANGUAGE plpgsql AS $lunation$
DECLARE
  v_thread_id text;
  v_token bigint;
  v_entry ${s}.tool_executions;
BEGIN
  SELECT thread_id INTO v_thread_id FROM ${s}.tool_executions
  WHERE run_id = p_run_id AND tool_call_id = p_tool_call_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'LN404', MESSAGE = 'tool execution not found';
  END IF;
  IF p_lease_token IS NOT NULL THEN
    SELECT token INTO v_token FROM ${s}.leases WHERE thread_id = v_thread_id FOR SHARE;
    IF v_token > p_lease_token THEN
      RAISE EXCEPTION USING ERRCODE = 'LN410', MESSAGE = 'stale lease',
        DETAIL = json_build_object('threadId', v_thread_id, 'currentToken', v_token)::text;
    END IF;
  END IF;
  -- The first result wins: a completed entry is returned unchanged.
  UPDATE ${s}.tool_executions SET status = 'completed', result = p_result, completed_at = p_now
  WHERE run_id = p_run_id AND tool_call_id = p_tool_call_id AND status = 'in-flight'
  RETURNING * INTO v_entry;
  IF NOT FOUND THEN
    SELECT * INTO v_entry FROM ${s}.tool_executions WHERE run_id = p_run_id AND tool_call_id = p_tool_call_id;
    IF NOT FOUND THEN
      RAISE EXCEPTION USING ERRCODE = 'LN404', MESSAGE = 'tool execution not found';
    END IF;
  END IF;
  RETURN row_to_json(v_entry);
END
$lunation$;

CREATE FUNCTION ${s}.acquire_lease(p_thread_id text, p_owner text, p_run_id text, p_ttl_ms bigint)
RETURNS json LANGUAGE plpgsql AS $lunation$
DECLARE
  v_now bigint := ${serverNowMs};
  v_lease ${s}.leases;
BEGIN
  -- The row outlives release, expiry and deleteThread: its token only grows.
  INSERT INTO ${s}.leases AS l (thread_id, token, owner, run_id, expires_at)
  VALUES (p_thread_id, 1, p_owner, p_run_id, v_now + p_ttl_ms)
  ON CONFLICT (thread_id) DO UPDATE SET token = l.token + 1, owner = excluded.owner, run_id = excluded.run_id,
    expires_at = excluded.expires_at
  WHERE l.expires_at IS NULL OR l.expires_at <= v_now
  RETURNING * INTO v_lease;
  IF NOT FOUND THEN
    SELECT * INTO v_lease FROM ${s}.leases WHERE thread_id = p_thread_id;
    RAISE EXCEPTION USING ERRCODE = 'LN423', MESSAGE = 'thread busy',
      DETAIL = json_build_object('owner', v_lease.owner, 'runId', v_lease.run_id)::text;
  END IF;
  RETURN row_to_json(v_lease);
END
$lunation$;

CREATE FUNCTION ${s}.delete_thread(p_thread_id text) RETURNS boolean LANGUAGE plpgsql AS $lunation$
BEGIN
  DELETE FROM ${s}.threads WHERE id = p_thread_id;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  UPDATE ${s}.leases SET expires_at = NULL WHERE thread_id = p_thread_id;
  DELETE FROM ${s}.messages WHERE thread_id = p_thread_id;
  DELETE FROM ${s}.runs WHERE thread_id = p_thread_id;
  DELETE FROM ${s}.tool_executions WHERE thread_id = p_thread_id;
  RETURN true;
END
$lunation$;
`;
}

/**
 * 003: which live instance holds a lease and when it last renewed it, and `acquire_lease` with the contract's
 * takeovers (a lease this instance left behind; one of the same owner unrenewed for half its time to live).
 */
function leaseIncarnation(s: string): string {
  return `
ALTER TABLE ${s}.leases ADD COLUMN incarnation text, ADD COLUMN renewed_at bigint NOT NULL DEFAULT 0;
UPDATE ${s}.leases SET renewed_at = coalesce(expires_at, 0);
DROP FUNCTION ${s}.acquire_lease(text, text, text, bigint);

${acquireLease(s, 'CREATE', '2 * (v_now - l.renewed_at) >= l.expires_at - l.renewed_at')}`;
}

/**
 * 006 (store specification v2): a lease of the same owner and another incarnation is taken over only once it went
 * unrenewed for three quarters of its time to live, when its holder no longer counts it held (replicas sharing
 * an owner name: a replica stalled past half its lease no longer loses the thread to its twin while it may still
 * start a tool). Same signature, so processes of the previous version keep calling it.
 */
function sameOwnerTakeover(s: string): string {
  return acquireLease(
    s,
    'CREATE OR REPLACE',
    '4 * (v_now - l.renewed_at) >= 3 * (l.expires_at - l.renewed_at)',
  );
}

/** `acquire_lease` with the contract's takeovers, a same-owner one once `unrenewedLongEnough` holds. */
function acquireLease(
  s: string,
  create: 'CREATE' | 'CREATE OR REPLACE',
  unrenewedLongEnough: string,
): string {
  return `${create} FUNCTION ${s}.acquire_lease(
  p_thread_id text, p_owner text, p_incarnation text, p_run_id text, p_ttl_ms bigint
) RETURNS json LANGUAGE plpgsql AS $lunation$
DECLARE
  v_now bigint := ${serverNowMs};
  v_lease ${s}.leases;
BEGIN
  -- The row outlives release, expiry and deleteThread: its token only grows.
  INSERT INTO ${s}.leases AS l (thread_id, token, owner, incarnation, run_id, renewed_at, expires_at)
  VALUES (p_thread_id, 1, p_owner, p_incarnation, p_run_id, v_now, v_now + p_ttl_ms)
  ON CONFLICT (thread_id) DO UPDATE SET token = l.token + 1, owner = excluded.owner,
    incarnation = excluded.incarnation, run_id = excluded.run_id, renewed_at = excluded.renewed_at,
    expires_at = excluded.expires_at
  WHERE l.expires_at IS NULL OR l.expires_at <= v_now
    OR (l.owner = p_owner AND l.incarnation IS NOT NULL AND p_incarnation IS NOT NULL
      AND (l.incarnation = p_incarnation OR ${unrenewedLongEnough}))
  RETURNING * INTO v_lease;
  IF NOT FOUND THEN
    SELECT * INTO v_lease FROM ${s}.leases WHERE thread_id = p_thread_id;
    RAISE EXCEPTION USING ERRCODE = 'LN423', MESSAGE = 'thread busy',
      DETAIL = json_build_object('owner', v_lease.owner, 'incarnation', v_lease.incarnation,
        'runId', v_lease.run_id, 'renewedAt', v_lease.renewed_at, 'expiresAt', v_lease.expires_at)::text;
  END IF;
  RETURN row_to_json(v_lease);
END
$lunation$;
`;
}

/**
 * Group commit: `run_batch` runs several of the store's calls in one statement (one round trip, one transaction,
 * one WAL flush), each in a subtransaction of its own so a rejected call rolls back alone and answers its error.
 * The calls it takes become functions, called the same way alone and batched.
 */
function batchedCalls(s: string): string {
  return `
CREATE FUNCTION ${s}.create_thread(p_id text, p_resource_id text, p_metadata jsonb, p_now bigint)
RETURNS text LANGUAGE sql AS $lunation$
  INSERT INTO ${s}.threads (id, resource_id, metadata, created_at, updated_at)
  VALUES (p_id, p_resource_id, p_metadata, p_now, p_now)
  ON CONFLICT (id) DO NOTHING RETURNING 'true'::text
$lunation$;

-- One query, so one snapshot: the thread, its messages, state and latest run as of one moment.
CREATE FUNCTION ${s}.load_checkpoint(p_thread_id text) RETURNS text LANGUAGE sql STABLE AS $lunation$
  SELECT json_build_object(
    'thread', json_build_object('id', t.id, 'resourceId', t.resource_id, 'metadata', t.metadata,
      'messageCount', t.message_count, 'createdAt', t.created_at, 'updatedAt', t.updated_at),
    'threadState', t.state,
    'messages', (SELECT coalesce(json_agg(json_build_object('seq', m.seq, 'message', m.message,
                   'runId', m.run_id, 'createdAt', m.created_at) ORDER BY m.seq), '[]'::json)
                 FROM ${s}.messages m WHERE m.thread_id = t.id),
    'latestRun', (SELECT r.record FROM ${s}.runs r WHERE r.thread_id = t.id
                  ORDER BY r.created_at DESC, r.seq DESC LIMIT 1)
  )::text
  FROM ${s}.threads t WHERE t.id = p_thread_id
$lunation$;

CREATE FUNCTION ${s}.release_lease(p_thread_id text, p_token bigint) RETURNS text LANGUAGE sql AS $lunation$
  UPDATE ${s}.leases SET expires_at = NULL
  WHERE thread_id = p_thread_id AND token = p_token AND expires_at IS NOT NULL RETURNING 'true'::text
$lunation$;

-- p_calls: [{ "op": name, "a": [arguments, the thread id first] }]; jsonb arguments arrive as JSON text.
-- Answers one element per call, in order: { "r": value or null } or { "e": SQLSTATE, "m": message, "d": detail }.
CREATE FUNCTION ${s}.run_batch(p_calls jsonb) RETURNS jsonb LANGUAGE plpgsql AS $lunation$
DECLARE
  v_call jsonb;
  v_a jsonb;
  v_value text;
  v_answers jsonb := '[]'::jsonb;
  v_state text;
  v_message text;
  v_detail text;
BEGIN
  FOR v_call IN SELECT c.value FROM jsonb_array_elements(p_calls) AS c LOOP
    v_a := v_call->'a';
    BEGIN
      CASE v_call->>'op'
        WHEN 'commit' THEN
          v_value := ${s}.commit_checkpoint(v_a->>0, (v_a->>1)::bigint, (v_a->>2)::bigint, (v_a->>3)::bigint,
            (v_a->>4)::jsonb, v_a->>5, (v_a->>6)::jsonb, (v_a->>7)::bigint, (v_a->>8)::jsonb, (v_a->>9)::jsonb,
            v_a->>10)::text;
        WHEN 'acquire-lease' THEN
          v_value := ${s}.acquire_lease(v_a->>0, v_a->>1, v_a->>2, v_a->>3, (v_a->>4)::bigint)::text;
        WHEN 'load-checkpoint' THEN
          v_value := ${s}.load_checkpoint(v_a->>0);
        WHEN 'create-thread' THEN
          v_value := ${s}.create_thread(v_a->>0, v_a->>1, (v_a->>2)::jsonb, (v_a->>3)::bigint);
        WHEN 'release-lease' THEN
          v_value := ${s}.release_lease(v_a->>0, (v_a->>1)::bigint);
      END CASE;
      v_answers := v_answers || jsonb_build_array(jsonb_build_object('r', v_value));
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT, v_detail = PG_EXCEPTION_DETAIL;
      v_answers := v_answers || jsonb_build_array(jsonb_build_object('e', v_state, 'm', v_message, 'd', v_detail));
    END;
  END LOOP;
  RETURN v_answers;
END
$lunation$;
`;
}

/**
 * Fences on commit: a lease token above the latest issued is refused (`LN411`, never issued), and a commit
 * without a token while an unexpired lease is held (`LN423`, thread busy). Same signature, so processes of the
 * previous version keep calling it (and get the stricter checks).
 */
function commitFences(s: string): string {
  return `
CREATE OR REPLACE FUNCTION ${s}.commit_checkpoint(
  p_thread_id text, p_expected_count bigint, p_lease_token bigint, p_now bigint, p_messages jsonb,
  p_run_id text, p_run jsonb, p_run_created_at bigint, p_state jsonb, p_tool_executions jsonb,
  p_message_run_id text
) RETURNS bigint LANGUAGE plpgsql AS $lunation$
DECLARE
  v_added bigint := jsonb_array_length(p_messages);
  v_count bigint;
  v_token bigint;
  v_owner text;
  v_lease_run text;
  v_expires bigint;
  v_entry record;
BEGIN
  -- Locks the thread row: commits of one thread run one after another. A rejection below rolls this back.
  UPDATE ${s}.threads
  SET message_count = message_count + v_added, updated_at = greatest(updated_at, p_now),
    state = coalesce(p_state, state)
  WHERE id = p_thread_id
  RETURNING message_count - v_added INTO v_count;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'LN404', MESSAGE = 'thread not found';
  END IF;
  -- FOR SHARE: a concurrent acquireLease waits for this commit, so a token is never issued mid-commit.
  SELECT token, owner, run_id, expires_at INTO v_token, v_owner, v_lease_run, v_expires
  FROM ${s}.leases WHERE thread_id = p_thread_id FOR SHARE;
  IF p_lease_token IS NOT NULL THEN
    IF v_token > p_lease_token THEN
      RAISE EXCEPTION USING ERRCODE = 'LN410', MESSAGE = 'stale lease', DETAIL = v_token::text;
    END IF;
    IF coalesce(v_token, 0) < p_lease_token THEN
      RAISE EXCEPTION USING ERRCODE = 'LN411', MESSAGE = 'lease token never issued',
        DETAIL = coalesce(v_token, 0)::text;
    END IF;
  ELSIF v_expires IS NOT NULL AND v_expires > ${serverNowMs} THEN
    RAISE EXCEPTION USING ERRCODE = 'LN423', MESSAGE = 'thread busy',
      DETAIL = json_build_object('owner', v_owner, 'runId', v_lease_run, 'expiresAt', v_expires)::text;
  END IF;
  IF v_count <> p_expected_count THEN
    RAISE EXCEPTION USING ERRCODE = 'LN409', MESSAGE = 'message count differs', DETAIL = v_count::text;
  END IF;
  IF v_added > 0 THEN
    INSERT INTO ${s}.messages (thread_id, seq, message, run_id, created_at)
    SELECT p_thread_id, v_count + m.ordinality, m.value, coalesce(p_message_run_id, p_run_id), p_now
    FROM jsonb_array_elements(p_messages) WITH ORDINALITY AS m;
  END IF;
  IF p_run_id IS NOT NULL THEN
    -- A run keeps the position (created_at, seq) of its first commit; later commits replace the record.
    UPDATE ${s}.runs SET record = p_run WHERE run_id = p_run_id AND thread_id = p_thread_id;
    IF NOT FOUND THEN
      INSERT INTO ${s}.runs (run_id, thread_id, record, created_at)
      VALUES (p_run_id, p_thread_id, p_run, p_run_created_at)
      ON CONFLICT (run_id) DO NOTHING;
      IF NOT FOUND THEN
        SELECT thread_id INTO v_owner FROM ${s}.runs WHERE run_id = p_run_id;
        RAISE EXCEPTION USING ERRCODE = 'LN400', MESSAGE = 'run of another thread',
          DETAIL = json_build_object('runId', p_run_id, 'threadId', v_owner)::text;
      END IF;
    END IF;
  END IF;
  IF p_tool_executions IS NOT NULL THEN
    -- An entry never changes thread: one of another thread rejects the commit, writing nothing.
    FOR v_entry IN
      SELECT e."runId" AS run_id, e."toolCallId" AS tool_call_id
      FROM jsonb_to_recordset(p_tool_executions) AS e("runId" text, "toolCallId" text)
    LOOP
      SELECT t.thread_id INTO v_owner FROM ${s}.tool_executions t
      WHERE t.run_id = v_entry.run_id AND t.tool_call_id = v_entry.tool_call_id;
      IF FOUND AND v_owner <> p_thread_id THEN
        RAISE EXCEPTION USING ERRCODE = 'LN400', MESSAGE = 'tool execution of another thread',
          DETAIL = json_build_object('runId', v_entry.run_id, 'toolCallId', v_entry.tool_call_id,
            'threadId', v_owner)::text;
      END IF;
    END LOOP;
    -- A completed entry is final: it keeps its result.
    INSERT INTO ${s}.tool_executions AS t (run_id, tool_call_id, thread_id, tool_name, idempotency_key, status,
      attempts, result, started_at, completed_at)
    SELECT e."runId", e."toolCallId", p_thread_id, e."toolName", e."idempotencyKey", e.status, e.attempts,
      e.result, e."startedAt", e."completedAt"
    FROM jsonb_to_recordset(p_tool_executions) AS e("runId" text, "toolCallId" text, "toolName" text,
      "idempotencyKey" text, status text, attempts integer, result jsonb, "startedAt" bigint, "completedAt" bigint)
    ON CONFLICT (run_id, tool_call_id) DO UPDATE SET tool_name = excluded.tool_name,
      idempotency_key = excluded.idempotency_key, status = excluded.status, attempts = excluded.attempts,
      result = excluded.result, started_at = excluded.started_at, completed_at = excluded.completed_at
    WHERE t.status <> 'completed';
  END IF;
  RETURN v_count + v_added;
END
$lunation$;
`;
}

/**
 * Every schema version for the schema `schema`, oldest first, as SQL. Migrations are forward-only: once
 * released, a migration never changes; a new version gets a new entry (a changed function: `CREATE OR
 * REPLACE` in a new one).
 */
export function postgresMigrations(schema: string): Record<string, string> {
  const s = quoteIdentifier(schema);
  return {
    '001_initial': initialTables(s),
    '002_store_functions': storeFunctions(s),
    '003_lease_incarnation': leaseIncarnation(s),
    '004_batched_calls': batchedCalls(s),
    '005_commit_fences': commitFences(s),
    '006_same_owner_takeover': sameOwnerTakeover(s),
  };
}

/** The newest schema version this package knows. */
export const latestSchemaVersion = Object.keys(postgresMigrations('lunation')).sort().at(-1)!;

function migrationOptions(schema: string): PostgresMigrationOptions {
  return {
    schema,
    migrations: postgresMigrations(schema),
    migrationTable: migrationTableName,
    lockTable: migrationLockTableName,
    lockKey: advisoryLockKey,
    owner: '@lunation/store-postgres',
  };
}

/** `db`'s statements as the contract's migration runner takes them. */
function queryOn(db: Kysely<unknown>): PostgresQuery {
  return (text, values = []) =>
    db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(text, [...values]));
}

/**
 * Brings `schema` up to `target` (default: the latest version) on one connection of `db`, holding the
 * schema's advisory lock, so processes starting at once migrate it once: the others wait, then find nothing to
 * do. All pending migrations run in one transaction; `migration-failed` leaves the previous version.
 */
export async function migrate(db: Kysely<unknown>, schema: string, target?: string): Promise<void> {
  const options = migrationOptions(schema);
  await db
    .withoutPlugins()
    .connection()
    .execute((connection) =>
      migratePostgresSchema(queryOn(connection), target === undefined ? options : { ...options, target }),
    );
}

/** The newest version applied to `schema`, undefined before the first. */
export function schemaVersion(db: Kysely<unknown>, schema: string): Promise<string | undefined> {
  return postgresSchemaVersion(queryOn(db.withoutPlugins()), migrationOptions(schema));
}
