import { interruptedCallPayloadSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { parseInterruptedCallAnswer } from './interrupted-call-answer.js';

describe('parseInterruptedCallAnswer', () => {
  it('reads again, fail and done (with a JSON or text result) as payloads the ticket accepts', () => {
    const cases: Array<[string, unknown]> = [
      ['a', { choice: 'rerun' }],
      ['Again', { choice: 'rerun' }],
      ['f', { choice: 'fail' }],
      ['d', { choice: 'done' }],
      ['done {"sent": true}', { choice: 'done', result: { sent: true } }],
      ['d it went out', { choice: 'done', result: 'it went out' }],
      ['maybe', undefined],
      ['', undefined],
    ];
    for (const [answer, expected] of cases) {
      const payload = parseInterruptedCallAnswer(answer);
      expect(payload, answer).toEqual(expected);
      if (payload) expect(interruptedCallPayloadSchema.parse(payload)).toEqual(payload);
    }
  });
});
