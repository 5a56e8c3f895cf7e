import { createHash, timingSafeEqual } from 'node:crypto';
import { LunationError } from '@lunation/contract';

/** The resource id of the terminal chat, and of every HTTP caller when no tokens are configured. */
export const LOCAL_RESOURCE = 'local';

/** The resource id of a token given without one (`--token <token>`). */
export const DEFAULT_TOKEN_RESOURCE = 'default';

/**
 * Parses `[<resource>=]<token>` specs into token → resource id. Two specs may share a resource (its threads
 * are then shared) but not a token.
 */
export function parseTokens(specs: readonly string[]): Map<string, string> {
  const tokens = new Map<string, string>();
  for (const spec of specs) {
    const separator = spec.indexOf('=');
    const resource = separator === -1 ? DEFAULT_TOKEN_RESOURCE : spec.slice(0, separator).trim();
    const token = separator === -1 ? spec : spec.slice(separator + 1).trim();
    if (resource === '' || token === '') {
      throw new LunationError(
        'invalid-argument',
        `Token "${spec}" should look like <resource>=<token> (see --help)`,
      );
    }
    if (tokens.has(token)) {
      throw new LunationError(
        'invalid-argument',
        `A token is listed twice (for "${tokens.get(token)}" and "${resource}")`,
      );
    }
    tokens.set(token, resource);
  }
  return tokens;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Maps `Authorization: Bearer <token>` headers to resource ids, comparing tokens in constant time. */
export class TokenAuth {
  private readonly entries: Array<{ digest: Buffer; resource: string }>;

  constructor(tokens: ReadonlyMap<string, string>) {
    this.entries = [...tokens].map(([token, resource]) => ({ digest: digest(token), resource }));
  }

  /** False when every request is accepted as the `local` resource (no tokens configured). */
  get enabled(): boolean {
    return this.entries.length > 0;
  }

  /** The resource id of the header's token; undefined when it is missing or unknown. */
  resourceOf(authorization: string | undefined): string | undefined {
    const token = authorization?.match(/^Bearer\s+(\S+)\s*$/i)?.[1];
    if (token === undefined) return undefined;
    const presented = digest(token);
    let resource: string | undefined;
    for (const entry of this.entries) {
      if (timingSafeEqual(entry.digest, presented)) resource = entry.resource;
    }
    return resource;
  }
}
