import { randomUUID } from 'node:crypto';

/** A new unique id (UUID v4). */
export function createId(): string {
  return randomUUID();
}
