import { LunationError } from '@lunation/contract';
import { LOCAL_RESOURCE } from '@lunation/http';

/** The resource id of the terminal chat, and of every HTTP caller when no tokens are configured. */
export { LOCAL_RESOURCE };

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
