import { type ErrorCode, LunationError } from '../errors.js';
import { parseRetryAfter } from './provider-retry.js';

const CONTEXT_OVERFLOW =
  /context[_ ]length[_ ]exceeded|prompt is too long|maximum context length|context window|input is too long|too many (input )?tokens|exceeds? the (model's )?(maximum )?context/i;

const QUOTA_EXCEEDED = /insufficient_quota/;

/**
 * The error code for an HTTP status; `bodyText` decides between `context-overflow` and `invalid-request`, and
 * between `rate-limited` and `quota-exceeded` (a 429 naming `insufficient_quota`).
 */
export function errorCodeForStatus(status: number, bodyText: string): ErrorCode {
  if (status === 429) return QUOTA_EXCEEDED.test(bodyText) ? 'quota-exceeded' : 'rate-limited';
  if (status === 503 || status === 529) return 'overloaded';
  if (status === 408 || status === 504) return 'timeout';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 404) return 'model-not-found';
  if (status === 409 || status >= 500) return 'provider-error';
  return CONTEXT_OVERFLOW.test(bodyText) ? 'context-overflow' : 'invalid-request';
}

/** The error code for a vendor error type sent without an HTTP status (an error event inside a stream). */
export function errorCodeForErrorType(type: string | undefined, bodyText: string): ErrorCode {
  switch (type) {
    case 'rate_limit_error':
    case 'rate_limit_exceeded':
    case 'tokens':
    case 'requests':
      return 'rate-limited';
    case 'insufficient_quota':
      return 'quota-exceeded';
    case 'overloaded_error':
      return 'overloaded';
    case 'timeout_error':
      return 'timeout';
    case 'authentication_error':
    case 'permission_error':
    case 'invalid_api_key':
      return 'unauthorized';
    case 'not_found_error':
    case 'model_not_found':
      return 'model-not-found';
    case 'invalid_request_error':
    case 'request_too_large':
    case 'context_length_exceeded':
      return CONTEXT_OVERFLOW.test(`${type} ${bodyText}`) ? 'context-overflow' : 'invalid-request';
    default:
      return 'provider-error';
  }
}

/** Who is calling, for error messages. */
export interface ProviderLabel {
  /** Display name, e.g. `OpenAI`. */
  name: string;
  model: string;
  /** How to set the key, e.g. 'pass `apiKey` or set OPENAI_API_KEY'. */
  apiKeyHint: string;
}

interface HeaderReader {
  get(name: string): string | null;
}

/** What {@link providerError} needs to say what went wrong and what to do. */
export interface ProviderErrorInput {
  label: ProviderLabel;
  code: ErrorCode;
  /** What happened, e.g. `answered HTTP 429 (rate_limit_exceeded)`. */
  summary: string;
  apiMessage: string | undefined;
  status?: number;
  headers?: HeaderReader;
  requestId?: string | null;
  vendorType?: string | null;
  vendorCode?: string | null;
  cause: unknown;
}

/** A LunationError whose message says what went wrong and what to do. */
export function providerError(input: ProviderErrorInput): LunationError {
  const { label, code } = input;
  const shouldRetry = input.headers?.get('x-should-retry');
  const said = input.apiMessage ? `: ${input.apiMessage.replace(/\.?\s*$/, '.')}` : '.';
  const message = `${label.name} ${input.summary} for model "${label.model}"${said} ${hint(code, label)}`;
  const details: Record<string, unknown> = { provider: label.name, model: label.model };
  if (input.requestId) details.requestId = input.requestId;
  if (input.vendorType) details.type = input.vendorType;
  if (input.vendorCode) details.code = input.vendorCode;
  return new LunationError(code, message, {
    cause: input.cause,
    status: input.status,
    retryAfterMs:
      code === 'rate-limited' || code === 'overloaded' ? parseRetryAfter(input.headers) : undefined,
    // An exhausted quota stays exhausted, whatever `x-should-retry` says.
    retryable:
      code === 'quota-exceeded'
        ? false
        : shouldRetry === 'true'
          ? true
          : shouldRetry === 'false'
            ? false
            : undefined,
    details,
  });
}

/** The error thrown when the caller's AbortSignal aborts. */
export function cancelledError(label: ProviderLabel, signal: AbortSignal | undefined): LunationError {
  return new LunationError(
    'cancelled',
    `The ${label.name} call for model "${label.model}" was cancelled through its AbortSignal.`,
    {
      cause: signal?.reason,
      details: { provider: label.name, model: label.model },
    },
  );
}

/** The error thrown when a stream ends before the vendor's final event. */
export function streamInterruptedError(label: ProviderLabel, reason: string, cause?: unknown): LunationError {
  return new LunationError(
    'stream-interrupted',
    `The ${label.name} stream for model "${label.model}" was cut off before it finished (${reason}). Retry the call.`,
    { cause, details: { provider: label.name, model: label.model } },
  );
}

function hint(code: ErrorCode, label: ProviderLabel): string {
  switch (code) {
    case 'rate-limited':
      return 'Wait and retry, or lower the request rate.';
    case 'quota-exceeded':
      return "The account's quota or credit is used up: check the plan and billing details of the API key's account; retrying will not help until then.";
    case 'overloaded':
      return 'The provider is overloaded; retry later.';
    case 'timeout':
      return 'Retry; if it keeps happening, raise the `timeout` option.';
    case 'unauthorized':
      return `Check the API key (${label.apiKeyHint}) and its permissions.`;
    case 'model-not-found':
      return 'Check the model id and the baseURL.';
    case 'context-overflow':
      return 'Shorten the conversation (compact or drop old messages) or use a model with a larger context window.';
    case 'invalid-request':
      return 'Fix the request the provider rejected.';
    default:
      return 'The provider failed; retry later.';
  }
}
