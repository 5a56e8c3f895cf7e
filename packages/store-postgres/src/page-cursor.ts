import { LunationError } from '@lunation/contract';

/** The position after which the next page starts: a timestamp and a tie-breaker. */
export type CursorPosition = [number, string | number];

/** Encodes a page position as an opaque URL-safe string. */
export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify(position)).toString('base64url');
}

/** Decodes a cursor from `encodeCursor`; `invalid-argument` for anything else. */
export function decodeCursor(cursor: string, tieBreaker: 'string' | 'number'): CursorPosition {
  let position: unknown;
  try {
    position = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    position = undefined;
  }
  if (
    Array.isArray(position) &&
    position.length === 2 &&
    Number.isSafeInteger(position[0]) &&
    typeof position[1] === tieBreaker
  ) {
    return position as CursorPosition;
  }
  throw new LunationError(
    'invalid-argument',
    `Invalid cursor ${JSON.stringify(cursor)}; pass the nextCursor of a previous page`,
  );
}
