import { createHash } from 'node:crypto';
import { LunationError } from '@lunation/contract';

/** The dispatcher's default schema. */
export const defaultSchema = 'lunation_dispatch';

/** The default name of the pg-boss queue that holds one job per thread with work. */
export const defaultQueueName = 'lunation_threads';

/**
 * What a schema name may be: lower-case letters, digits and `_`, at most 50 bytes. pg-boss writes the schema
 * into its SQL unquoted (so PostgreSQL would fold upper case) and allows at most 50 bytes.
 */
const schemaPattern = /^[a-z_][a-z0-9_]{0,49}$/;

/** A pg-boss queue name: letters, digits, `_`, `-`, `.` and `/`, as pg-boss accepts. */
const queueNamePattern = /^[A-Za-z0-9_\-./]{1,50}$/;

/** Throws `invalid-argument` unless `schema` is a name the dispatcher accepts. */
export function assertSchemaName(schema: unknown): asserts schema is string {
  if (typeof schema !== 'string' || !schemaPattern.test(schema)) {
    throw new LunationError(
      'invalid-argument',
      `schema must be 1 to 50 lower-case letters, digits or underscores, not starting with a digit; got ${JSON.stringify(schema)}`,
    );
  }
}

/** Throws `invalid-argument` unless `name` is a pg-boss queue name. */
export function assertQueueName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || !queueNamePattern.test(name)) {
    throw new LunationError(
      'invalid-argument',
      `queueName must be 1 to 50 letters, digits, "_", "-", "." or "/"; got ${JSON.stringify(name)}`,
    );
  }
}

/**
 * The LISTEN/NOTIFY channels of one schema. A channel name is at most 63 bytes, so each is `ld_` plus a hash of
 * the schema and its subject: `wake` (a thread may be claimable), `cancel` (a thread's cancel request) and one
 * per run for its events.
 */
export class DispatchChannels {
  readonly wake: string;
  readonly cancel: string;
  readonly #schema: string;

  constructor(schema: string) {
    this.#schema = schema;
    this.wake = this.#channel('wake', '');
    this.cancel = this.#channel('cancel', '');
  }

  /** The channel a run's appends and end mark are announced on. */
  events(runId: string): string {
    return this.#channel('events', runId);
  }

  #channel(kind: string, subject: string): string {
    const hash = createHash('sha256').update(`${this.#schema}\0${kind}\0${subject}`).digest('hex');
    return `ld_${hash.slice(0, 40)}`;
  }
}
