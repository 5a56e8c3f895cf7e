import { LunationError } from '@lunation/contract';
import type { ProviderLabel } from '@lunation/contract/provider-utils';

/**
 * The error for a function call the response ended in the middle of (the token limit, a content filter): its
 * arguments are a fragment, so it must not reach the tool loop, where it would be answered "invalid arguments"
 * and asked for again on the same budget. Typed and not retryable: the same request stops at the same limit.
 * `reason` is the vendor's: `max_output_tokens` / `content_filter` (Responses), `length` (Chat Completions).
 */
export function cutOffCallError(
  label: ProviderLabel,
  call: { callId: string; name: string; arguments: string },
  reason: string,
): LunationError {
  const fix =
    reason === 'content_filter'
      ? 'Rephrase the request; the answer was stopped by a content filter.'
      : 'Raise `overrides.maxTokens` (reasoning tokens count against it) or ask for less at once.';
  return new LunationError(
    'tool-invalid-arguments',
    `${label.name} ended the answer (${reason}) in the middle of a call to the tool "${call.name}" (${call.callId}) for model "${label.model}": its arguments are cut off, so the call was dropped and nothing ran. ${fix}`,
    {
      retryable: false,
      details: {
        provider: label.name,
        model: label.model,
        toolCallId: call.callId,
        toolName: call.name,
        arguments: call.arguments,
        incompleteReason: reason,
      },
    },
  );
}
