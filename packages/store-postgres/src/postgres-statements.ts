import { createHash } from 'node:crypto';
import { quoteIdentifier, serverNowMs } from '@lunation/contract/postgres-utils';

/**
 * One SQL statement of the store. Every statement answers rows of one text column `j` holding JSON, so the
 * store reads its results the same way whatever type parsers an injected pool has.
 */
export interface Statement {
  /** The prepared-statement name: unique per SQL text (the text names the schema). */
  readonly name: string;
  readonly text: string;
  /**
   * The call's name in `run_batch`, when the call can share a round trip with others (see `CallBatcher`);
   * its values are the function's arguments in order, the thread id first.
   */
  readonly batchOperation?: string;
}

function statement(text: string, batchOperation?: string): Statement {
  const hash = createHash('sha256').update(text).digest('base64url').slice(0, 22);
  return batchOperation === undefined
    ? { name: `lunation_${hash}`, text }
    : { name: `lunation_${hash}`, text, batchOperation };
}

/** Every statement the store runs against `schema`; each is one round trip. */
export function createStatements(schema: string) {
  const s = quoteIdentifier(schema);
  const thread = `json_build_object('id', t.id, 'resourceId', t.resource_id, 'metadata', t.metadata,
    'messageCount', t.message_count, 'createdAt', t.created_at, 'updatedAt', t.updated_at)`;
  const messageRecord = `json_build_object('seq', m.seq, 'message', m.message, 'runId', m.run_id,
    'createdAt', m.created_at)`;
  return {
    createThread: statement(`SELECT ${s}.create_thread($1, $2, $3, $4) AS j`, 'create-thread'),
    getThread: statement(`SELECT ${thread}::text AS j FROM ${s}.threads t WHERE t.id = $1`),
    listThreads: statement(
      `SELECT ${thread}::text AS j FROM ${s}.threads t
       WHERE (t.created_at, t.id) > ($1::bigint, $2::text) ORDER BY t.created_at, t.id LIMIT $3::bigint`,
    ),
    listThreadsOfResource: statement(
      `SELECT ${thread}::text AS j FROM ${s}.threads t
       WHERE t.resource_id = $1 AND (t.created_at, t.id) > ($2::bigint, $3::text)
       ORDER BY t.created_at, t.id LIMIT $4::bigint`,
    ),
    updateThreadMetadata: statement(
      `UPDATE ${s}.threads t SET metadata = $2, updated_at = greatest(t.updated_at, $3::bigint) WHERE t.id = $1
       RETURNING ${thread}::text AS j`,
    ),
    deleteThread: statement(`SELECT ${s}.delete_thread($1)::text AS j`),

    listMessages: statement(
      `SELECT ${messageRecord}::text AS j FROM ${s}.messages m
       WHERE m.thread_id = $1 AND m.seq >= $2::bigint AND m.seq <= $3::bigint ORDER BY m.seq LIMIT $4::bigint`,
    ),

    getRun: statement(`SELECT record::text AS j FROM ${s}.runs WHERE run_id = $1`),
    getLatestRun: statement(
      `SELECT record::text AS j FROM ${s}.runs WHERE thread_id = $1 ORDER BY created_at DESC, seq DESC LIMIT 1`,
    ),
    listRuns: statement(
      `SELECT json_build_object('record', record, 'createdAt', created_at, 'seq', seq)::text AS j
       FROM ${s}.runs WHERE thread_id = $1 AND (created_at, seq) > ($2::bigint, $3::bigint)
       ORDER BY created_at, seq LIMIT $4::bigint`,
    ),
    getThreadState: statement(`SELECT coalesce(state::text, '{}') AS j FROM ${s}.threads WHERE id = $1`),

    commit: statement(
      `SELECT ${s}.commit_checkpoint($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)::text AS j`,
      'commit',
    ),
    // One statement, so one snapshot: the thread, its messages, state and latest run as of one moment.
    loadCheckpoint: statement(`SELECT ${s}.load_checkpoint($1) AS j`, 'load-checkpoint'),

    beginToolExecution: statement(`SELECT ${s}.begin_tool_execution($1, $2, $3, $4, $5, $6, $7)::text AS j`),
    completeToolExecution: statement(`SELECT ${s}.complete_tool_execution($1, $2, $3, $4, $5)::text AS j`),
    getToolExecution: statement(
      `SELECT row_to_json(e)::text AS j FROM ${s}.tool_executions e WHERE e.run_id = $1 AND e.tool_call_id = $2`,
    ),
    // A transactional effect's first statement: the entry, locked until the transaction ends.
    lockToolExecution: statement(
      `SELECT row_to_json(e)::text AS j FROM ${s}.tool_executions e WHERE e.run_id = $1 AND e.tool_call_id = $2
       FOR UPDATE`,
    ),
    listToolExecutions: statement(
      `SELECT row_to_json(e)::text AS j FROM ${s}.tool_executions e WHERE e.run_id = $1 ORDER BY e.seq`,
    ),

    acquireLease: statement(`SELECT ${s}.acquire_lease($1, $2, $3, $4, $5)::text AS j`, 'acquire-lease'),
    // Succeeds while the token is the latest issued and not released, also after the lease expired.
    renewLease: statement(
      `WITH renewed AS (
         UPDATE ${s}.leases l SET renewed_at = n.now, expires_at = n.now + $3::bigint
         FROM (SELECT ${serverNowMs} AS now) n
         WHERE l.thread_id = $1 AND l.token = $2::bigint AND l.expires_at IS NOT NULL RETURNING l.*
       )
       SELECT json_build_object('lease', (SELECT row_to_json(r) FROM renewed r),
         'currentToken', (SELECT token FROM ${s}.leases WHERE thread_id = $1))::text AS j`,
    ),
    releaseLease: statement(`SELECT ${s}.release_lease($1, $2) AS j`, 'release-lease'),
    getLease: statement(
      `SELECT row_to_json(l)::text AS j FROM ${s}.leases l WHERE l.thread_id = $1 AND l.expires_at > ${serverNowMs}`,
    ),

    /** Several calls in one round trip and one transaction, each rolled back alone when it fails. */
    runBatch: statement(`SELECT ${s}.run_batch($1)::text AS j`),

    dropSchema: statement(`DROP SCHEMA IF EXISTS ${s} CASCADE`),
  };
}

export type Statements = ReturnType<typeof createStatements>;
