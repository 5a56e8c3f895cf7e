import { LunationError } from '@lunation/contract';
import {
  errorCodeForErrorType,
  errorCodeForStatus,
  type ProviderLabel,
  providerError,
  streamInterruptedError,
} from '@lunation/contract/provider-utils';
import { APIConnectionError, APIConnectionTimeoutError, APIError, OpenAIError } from 'openai';

interface OpenAIErrorBody {
  message?: unknown;
  type?: unknown;
  code?: unknown;
}

/**
 * Maps anything the SDK threw to a LunationError. `phase` says whether the response had started:
 * a failure while reading the stream is `stream-interrupted`.
 */
export function mapError(error: unknown, label: ProviderLabel, phase: 'request' | 'stream'): LunationError {
  if (LunationError.isInstance(error)) return error;
  if (error instanceof APIConnectionTimeoutError) {
    return providerError({
      label,
      code: 'timeout',
      summary: 'did not answer in time',
      apiMessage: undefined,
      cause: error,
    });
  }
  if (error instanceof APIConnectionError) {
    if (phase === 'stream') return streamInterruptedError(label, error.message, error);
    const reason = error.cause instanceof Error ? error.cause.message : error.message;
    return providerError({
      label,
      code: 'provider-error',
      summary: 'could not be reached',
      apiMessage: reason,
      cause: error,
    });
  }
  if (error instanceof APIError) {
    const body = (error.error ?? {}) as OpenAIErrorBody;
    const apiMessage = typeof body.message === 'string' ? body.message : error.message;
    const vendorType = typeof body.type === 'string' ? body.type : undefined;
    const vendorCode = typeof body.code === 'string' ? body.code : undefined;
    const bodyText = `${apiMessage} ${vendorType ?? ''} ${vendorCode ?? ''}`;
    const vendor = vendorCode ?? vendorType;
    if (typeof error.status === 'number') {
      return providerError({
        label,
        code: errorCodeForStatus(error.status, bodyText),
        summary: `answered HTTP ${error.status}${vendor ? ` (${vendor})` : ''}`,
        apiMessage,
        status: error.status,
        headers: error.headers,
        requestId: error.requestID,
        vendorType,
        vendorCode,
        cause: error,
      });
    }
    return providerError({
      label,
      code: errorCodeForErrorType(vendorCode ?? vendorType, bodyText),
      summary: `sent an error inside the stream${vendor ? ` (${vendor})` : ''}`,
      apiMessage,
      headers: error.headers,
      requestId: error.requestID,
      vendorType,
      vendorCode,
      cause: error,
    });
  }
  if (error instanceof OpenAIError && phase === 'request') {
    return new LunationError(
      /api.?key/i.test(error.message) ? 'unauthorized' : 'invalid-argument',
      `The OpenAI client could not send the request for model "${label.model}": ${error.message}`,
      { cause: error, details: { provider: label.name, model: label.model } },
    );
  }
  if (phase === 'stream') {
    const reason = error instanceof Error ? `${error.message}${causeText(error)}` : String(error);
    return streamInterruptedError(label, reason, error);
  }
  return providerError({
    label,
    code: 'provider-error',
    summary: 'failed before answering',
    apiMessage: error instanceof Error ? error.message : String(error),
    cause: error,
  });
}

function causeText(error: Error): string {
  return error.cause instanceof Error ? `: ${error.cause.message}` : '';
}
