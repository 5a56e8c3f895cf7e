import { LunationError } from '@lunation/contract';
import {
  errorCodeForErrorType,
  errorCodeForStatus,
  type ProviderLabel,
  providerError,
  streamInterruptedError,
} from '@lunation/contract/provider-utils';

/** The shape of the AI SDK's `APICallError` (checked by its marker, so no runtime import is needed). */
interface ApiCallErrorLike {
  message: string;
  statusCode?: number;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  isRetryable: boolean;
  cause?: unknown;
}

/** True for an AI SDK error of the given name, from any copy of `@ai-sdk/provider` (its `Symbol.for` marker). */
function isAiSdkError(error: unknown, name?: string): error is Error {
  const marker = Symbol.for(name === undefined ? 'vercel.ai.error' : `vercel.ai.error.${name}`);
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true;
}

/**
 * Maps anything a V4 model threw to a LunationError. `phase` says whether the response had started: a failure
 * while reading the stream is `stream-interrupted` unless it carries an HTTP status.
 */
export function mapError(error: unknown, label: ProviderLabel, phase: 'request' | 'stream'): LunationError {
  if (LunationError.isInstance(error)) return error;
  if (isAiSdkError(error, 'AI_APICallError')) {
    const apiError = error as unknown as ApiCallErrorLike;
    const status = apiError.statusCode;
    const headers = headerReader(apiError.responseHeaders);
    const apiMessage = apiMessageOf(apiError);
    // A failure after a 2xx status line is a cut stream, not an HTTP error.
    if (typeof status === 'number' && status >= 400) {
      return providerError({
        label,
        code: errorCodeForStatus(status, `${apiMessage} ${apiError.responseBody ?? ''}`),
        summary: `answered HTTP ${status}`,
        apiMessage,
        status,
        headers,
        requestId: headers.get('request-id') ?? headers.get('x-request-id'),
        cause: error,
      });
    }
    if (phase === 'stream' || typeof status === 'number') {
      return streamInterruptedError(label, causeMessage(apiError) ?? apiError.message, error);
    }
    return providerError({
      label,
      code: 'provider-error',
      summary: 'could not be reached',
      apiMessage: causeMessage(apiError) ?? apiError.message,
      headers,
      cause: error,
    });
  }
  if (isAiSdkError(error, 'AI_LoadAPIKeyError')) {
    return new LunationError(
      'unauthorized',
      `${label.name} has no API key for model "${label.model}": ${error.message}`,
      {
        cause: error,
        details: { provider: label.name, model: label.model },
      },
    );
  }
  if (isAiSdkError(error) && phase === 'request') {
    return new LunationError(
      'invalid-request',
      `${label.name} refused the request for model "${label.model}" before sending it (${error.name}): ${error.message} Fix the request or use a model that supports it.`,
      { cause: error, details: { provider: label.name, model: label.model, type: error.name } },
    );
  }
  if (phase === 'stream') {
    const reason = error instanceof Error ? `${error.message}${causeSuffix(error)}` : String(error);
    return streamInterruptedError(label, reason, error);
  }
  return providerError({
    label,
    code: 'provider-error',
    summary: 'failed before answering',
    apiMessage: error instanceof Error ? `${error.message}${causeSuffix(error)}` : String(error),
    cause: error,
  });
}

/** An `error` part of a V4 stream: an AI SDK error, or a provider stream error `{ type, message, statusCode }`. */
export function streamErrorPart(error: unknown, label: ProviderLabel): LunationError {
  if (LunationError.isInstance(error) || isAiSdkError(error)) return mapError(error, label, 'stream');
  const fields = (typeof error === 'object' && error !== null ? error : {}) as Record<string, unknown>;
  const type = typeof fields.type === 'string' ? fields.type : undefined;
  const message = typeof fields.message === 'string' ? fields.message : String(error);
  const status = typeof fields.statusCode === 'number' ? fields.statusCode : undefined;
  const code =
    type !== undefined
      ? errorCodeForErrorType(type, message)
      : status !== undefined
        ? errorCodeForStatus(status, message)
        : 'provider-error';
  return providerError({
    label,
    code,
    summary: `sent an error inside the stream${type ? ` (${type})` : ''}`,
    apiMessage: message,
    vendorType: type,
    cause: error,
  });
}

function headerReader(headers: Record<string, string> | undefined): { get(name: string): string | null } {
  const lower = new Map(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  return { get: (name) => lower.get(name.toLowerCase()) ?? null };
}

/** The vendor's own error message from the response body (`{ error: { message } }`), else the error's. */
function apiMessageOf(error: ApiCallErrorLike): string {
  try {
    const body = JSON.parse(error.responseBody ?? '') as {
      error?: { message?: unknown } | string;
      message?: unknown;
    };
    if (typeof body.error === 'object' && typeof body.error?.message === 'string') return body.error.message;
    if (typeof body.error === 'string') return body.error;
    if (typeof body.message === 'string') return body.message;
  } catch {
    // not JSON
  }
  return error.message;
}

function causeMessage(error: ApiCallErrorLike): string | undefined {
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : undefined;
}

function causeSuffix(error: Error): string {
  return error.cause instanceof Error ? `: ${error.cause.message}` : '';
}
