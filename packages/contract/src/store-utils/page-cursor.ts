import { LunationError } from '../errors.js';

/** The position after which the next page starts: a timestamp and a tie-breaker. */
export type CursorPosition = [number, string | number];

/** Encodes a page position as an opaque URL-safe string (base64url of its JSON, without padding). */
export function encodeCursor(position: CursorPosition): string {
  const bytes = new TextEncoder().encode(JSON.stringify(position));
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Decodes a cursor from {@link encodeCursor}; `invalid-argument` for anything else. */
export function decodeCursor(cursor: string, tieBreaker: 'string' | 'number'): CursorPosition {
  let position: unknown;
  try {
    const binary = atob(cursor.replace(/-/g, '+').replace(/_/g, '/'));
    const bytes = Uint8Array.from(binary, (character) => character.charCodeAt(0));
    position = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
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
