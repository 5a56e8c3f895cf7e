import { HttpError } from './http-error.js';

/** Options of the API's CORS answers (`createHttpApi({ cors })`), for pages on other origins. */
export interface CorsOptions {
  /**
   * The origins whose pages may call the API, e.g. `['https://app.example.com']` (scheme, host and port, as the
   * browser sends them in `Origin`), or a predicate. `'*'` allows every origin.
   */
  origins: readonly string[] | '*' | ((origin: string) => boolean);
  /** Whether pages may send cookies (`Access-Control-Allow-Credentials: true`). @default false */
  credentials?: boolean;
  /** How long a browser may reuse a preflight's answer, in seconds. @default 600 */
  maxAgeSeconds?: number;
}

/** The request headers a page may send: auth, JSON bodies, stream reconnects. */
const ALLOWED_HEADERS = 'authorization, content-type, last-event-id';
/** The response headers a page may read besides the simple ones. */
const EXPOSED_HEADERS = 'retry-after, www-authenticate, x-vercel-ai-ui-message-stream';

/** Answers preflights and marks the answers to allowed origins. */
export class Cors {
  constructor(private readonly options: CorsOptions) {}

  /** Whether the request is a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`). */
  static isPreflight(request: Request): boolean {
    return request.method === 'OPTIONS' && request.headers.has('access-control-request-method');
  }

  /**
   * The answer to a preflight for a route with `methods`: 204 with the allowed methods and headers.
   * @throws HttpError 403 `origin-not-allowed` for an origin not in `origins`.
   */
  preflight(request: Request, methods: string[]): Response {
    const origin = request.headers.get('origin');
    if (origin === null || !this.allows(origin)) {
      throw new HttpError(
        403,
        'origin-not-allowed',
        `Origin "${origin ?? '(none)'}" may not call this API; add it to the \`cors.origins\` option of createHttpApi`,
      );
    }
    // `mark` adds the origin when the API answers.
    return new Response(null, {
      status: 204,
      headers: {
        'access-control-allow-methods': methods.join(', '),
        'access-control-allow-headers': ALLOWED_HEADERS,
        'access-control-max-age': String(this.options.maxAgeSeconds ?? 600),
      },
    });
  }

  /** Adds the CORS headers to an answer when the request comes from an allowed origin. */
  mark(request: Request, response: Response): Response {
    response.headers.append('vary', 'Origin');
    const origin = request.headers.get('origin');
    if (origin === null || !this.allows(origin)) return response;
    const any = this.options.origins === '*' && !this.options.credentials;
    response.headers.set('access-control-allow-origin', any ? '*' : origin);
    if (this.options.credentials) response.headers.set('access-control-allow-credentials', 'true');
    if (!Cors.isPreflight(request)) response.headers.set('access-control-expose-headers', EXPOSED_HEADERS);
    return response;
  }

  private allows(origin: string): boolean {
    const { origins } = this.options;
    if (origins === '*') return true;
    return typeof origins === 'function' ? origins(origin) : origins.includes(origin);
  }
}
