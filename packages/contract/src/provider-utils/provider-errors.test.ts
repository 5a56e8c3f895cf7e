import { describe, expect, it } from 'vitest';
import { LunationError } from '../errors.js';
import { errorCodeForErrorType, errorCodeForStatus, providerError } from './index.js';

const label = { name: 'OpenAI', model: 'gpt-5-mini', apiKeyHint: 'OPENAI_API_KEY' };

describe('provider error codes', () => {
  it('a 429 naming insufficient_quota is quota-exceeded; other 429s stay rate-limited', () => {
    expect(
      errorCodeForStatus(429, 'You exceeded your current quota insufficient_quota insufficient_quota'),
    ).toBe('quota-exceeded');
    expect(errorCodeForStatus(429, 'Rate limit reached tokens rate_limit_exceeded')).toBe('rate-limited');
    expect(errorCodeForErrorType('insufficient_quota', 'You exceeded your current quota')).toBe(
      'quota-exceeded',
    );
  });

  it('quota-exceeded is not retryable, even when the server says x-should-retry: true', () => {
    const error = providerError({
      label,
      code: 'quota-exceeded',
      summary: 'answered HTTP 429 (insufficient_quota)',
      apiMessage: 'You exceeded your current quota, please check your plan and billing details.',
      status: 429,
      headers: new Headers({ 'x-should-retry': 'true', 'retry-after': '20' }),
      cause: undefined,
    });
    expect(LunationError.hasCode(error, 'quota-exceeded')).toBe(true);
    expect(error.isRetryable).toBe(false);
    expect(error.retryAfterMs).toBeUndefined();
    expect(error.message).toBe(
      'OpenAI answered HTTP 429 (insufficient_quota) for model "gpt-5-mini": You exceeded your current quota, please check your plan and billing details. The account\'s quota or credit is used up: check the plan and billing details of the API key\'s account; retrying will not help until then.',
    );
    expect(new LunationError('quota-exceeded', 'no credit').isRetryable).toBe(false);
  });
});
