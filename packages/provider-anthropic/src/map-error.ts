import { AnthropicError, APIConnectionError, APIConnectionTimeoutError, APIError } from '@anthropic-ai/sdk';
import { LunationError } from '@lunation/contract';
import {
  errorCodeForErrorType,
  errorCodeForStatus,
  type ProviderLabel,
  providerError,
  streamInterruptedError,
} from '@lunation/contract/provider-utils';

/**
 * Maps anything the SDK threw to a LunationError. `phase` says whether the response had started:
 * a failure while reading the stream is `stream-interrupted`; an `error` event keeps its own type.
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
    const apiMessage = error.apiMessage ?? error.message;
    const vendorType = error.type ?? undefined;
    const bodyText = `${apiMessage} ${vendorType ?? ''} ${error.errorCode ?? ''}`;
    if (typeof error.status === 'number') {
      return providerError({
        label,
        code: errorCodeForStatus(error.status, bodyText),
        summary: `answered HTTP ${error.status}${vendorType ? ` (${vendorType})` : ''}`,
        apiMessage,
        status: error.status,
        headers: error.headers,
        requestId: error.requestID,
        vendorType,
        vendorCode: error.errorCode,
        cause: error,
      });
    }
    return providerError({
      label,
      code: errorCodeForErrorType(vendorType, bodyText),
      summary: `sent an error event inside the stream${vendorType ? ` (${vendorType})` : ''}`,
      apiMessage,
      headers: error.headers,
      requestId: error.requestID,
      vendorType,
      vendorCode: error.errorCode,
      cause: error,
    });
  }
  if (error instanceof AnthropicError && phase === 'request') {
    return new LunationError(
      /auth|api.?key|credential/i.test(error.message) ? 'unauthorized' : 'invalid-argument',
      `The Anthropic client could not send the request for model "${label.model}": ${error.message}`,
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
