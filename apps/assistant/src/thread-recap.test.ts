import type { Message, MessageRecord } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { recapLines } from './thread-recap.js';

const record = (seq: number, message: Omit<Message, 'id'>): MessageRecord => ({
  threadId: 't',
  seq,
  message: { id: `m${seq}`, ...message } as Message,
  createdAt: seq,
});
const text = (value: string) => [{ type: 'text' as const, text: value }];

describe('recapLines', () => {
  it('shows the last four user and assistant texts, one line each, cut to the width', () => {
    const records = [
      record(1, { role: 'assistant', content: text('an earlier answer, left out') }),
      record(1, { role: 'user', content: text('first question') }),
      record(2, { role: 'assistant', content: text('first answer') }),
      record(3, { role: 'user', content: text('second\nquestion') }),
      record(4, {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'c', toolName: 'calculator', arguments: '{}' }],
      }),
      record(5, {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c', toolName: 'calculator', result: { status: 'success' } },
        ],
      }),
      record(6, {
        role: 'user',
        content: text('an internal note'),
        metadata: { visibility: 'internal' },
      }),
      record(7, { role: 'assistant', content: text(`a long answer ${'x'.repeat(200)}`) }),
    ];
    expect(recapLines(records, 40)).toEqual([
      'you> first question',
      'assistant> first answer',
      'you> second question',
      `assistant> a long answer ${'x'.repeat(14)}…`,
    ]);
    expect(recapLines(records.slice(1, 3))).toEqual(['you> first question', 'assistant> first answer']);
  });

  it('is empty for a thread without texts', () => {
    expect(recapLines([])).toEqual([]);
  });
});
