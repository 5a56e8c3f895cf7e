import { createHash, timingSafeEqual } from 'node:crypto';
import type { ThreadCaller } from '@lunation/runtime';

/** The resource id of every caller when the API has no `authenticate` hook. */
export const LOCAL_RESOURCE = 'local';

/**
 * The runtime's caller for an authenticated resource id, for its owner rule (`ownsThread`): the local caller
 * (no `authenticate`) also acts on threads without an owner; a tenant only on its own.
 */
export function threadCaller(resource: string): ThreadCaller {
  return { resourceId: resource, ownedOnly: resource !== LOCAL_RESOURCE };
}

/** Who the caller is: its resource id (tenant), or undefined to answer 401. */
export type Authenticate = (request: Request) => string | undefined | Promise<string | undefined>;

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * An {@link Authenticate} hook from bearer token → resource id: reads `Authorization: Bearer <token>`
 * (the scheme in any case) and compares tokens in constant time. Two tokens may share a resource.
 */
export function tokenAuth(tokens: ReadonlyMap<string, string>): Authenticate {
  const entries = [...tokens].map(([token, resource]) => ({ digest: digest(token), resource }));
  return (request) => {
    const token = request.headers.get('authorization')?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
    if (token === undefined) return undefined;
    const presented = digest(token);
    let resource: string | undefined;
    for (const entry of entries) {
      if (timingSafeEqual(entry.digest, presented)) resource = entry.resource;
    }
    return resource;
  };
}
