import { LunationError } from '@lunation/contract';

/** The store's default schema. */
export const defaultSchema = 'lunation';

/** What a schema name may be: a plain SQL identifier of at most 63 bytes (PostgreSQL's limit). */
const schemaPattern = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Throws `invalid-argument` unless `schema` is a name the store accepts. */
export function assertSchemaName(schema: unknown): asserts schema is string {
  if (typeof schema !== 'string' || !schemaPattern.test(schema)) {
    throw new LunationError(
      'invalid-argument',
      `schema must be 1 to 63 letters, digits or underscores, not starting with a digit; got ${JSON.stringify(schema)}`,
    );
  }
}
