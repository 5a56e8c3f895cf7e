import type { Message, MessageRecord, SuspensionTicket } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { toChatUIMessages } from './ui-messages.js';

let seq = 0;
const record = (message: Message, runId?: string): MessageRecord => ({
  threadId: 't1',
  seq: ++seq,
  message,
  ...(runId ? { runId } : {}),
  createdAt: seq,
});
const call = (toolCallId: string, toolName: string, args: string) =>
  ({ type: 'tool-call', toolCallId, toolName, arguments: args }) as const;

describe('toChatUIMessages', () => {
  it('groups a run into one assistant message (id: the run id) with a step-start per step and each result in its part', () => {
    const records = [
      record({ id: 's', role: 'system', content: [{ type: 'text', text: 'be brief' }] }),
      record(
        {
          id: 'u1',
          role: 'user',
          content: [
            { type: 'text', text: 'look' },
            { type: 'image', source: { type: 'base64', mediaType: 'image/png', data: 'AAAA' } },
          ],
        },
        'r1',
      ),
      record(
        {
          id: 'a1',
          role: 'assistant',
          content: [
            { type: 'reasoning', text: 'thinking' },
            { type: 'text', text: 'Looking.' },
            call('c1', 'read_file', '{"path":"a"}'),
            call('c2', 'read_file', '{"path":"b"}'),
            call('c3', 'notes__search', '{"q":"x"}'),
            call('c4', 'calculator', 'not json'),
          ],
        },
        'r1',
      ),
      record(
        {
          id: 'm1',
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: 'c1',
              toolName: 'read_file',
              result: { status: 'success', data: 'A' },
            },
            {
              type: 'tool-result',
              toolCallId: 'c2',
              toolName: 'read_file',
              result: { status: 'error', message: 'declined', metadata: { declined: true } },
            },
            {
              type: 'tool-result',
              toolCallId: 'c3',
              toolName: 'notes__search',
              result: { status: 'error', message: 'server down' },
            },
            {
              type: 'tool-result',
              toolCallId: 'c4',
              toolName: 'calculator',
              result: { status: 'error', message: 'Cancelled: stopped.', metadata: { cancelled: true } },
            },
          ],
        },
        'r1',
      ),
      record(
        {
          id: 'i1',
          role: 'assistant',
          content: [{ type: 'text', text: 'hidden' }],
          metadata: { visibility: 'internal' },
        },
        'r1',
      ),
      record({ id: 'a2', role: 'assistant', content: [{ type: 'text', text: 'Done.' }] }, 'r1'),
    ];
    expect(toChatUIMessages(records)).toEqual([
      {
        id: 'u1',
        role: 'user',
        metadata: { threadId: 't1', runId: 'r1' },
        parts: [
          { type: 'text', text: 'look' },
          { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,AAAA' },
        ],
      },
      {
        id: 'r1',
        role: 'assistant',
        metadata: { threadId: 't1', runId: 'r1' },
        parts: [
          { type: 'step-start' },
          { type: 'reasoning', text: 'thinking', state: 'done' },
          { type: 'text', text: 'Looking.', state: 'done' },
          {
            type: 'tool-read_file',
            toolCallId: 'c1',
            state: 'output-available',
            input: { path: 'a' },
            output: 'A',
          },
          { type: 'tool-read_file', toolCallId: 'c2', state: 'output-denied', input: { path: 'b' } },
          {
            type: 'dynamic-tool',
            toolName: 'notes__search',
            toolCallId: 'c3',
            state: 'output-error',
            input: { q: 'x' },
            errorText: 'server down',
          },
          { type: 'tool-calculator', toolCallId: 'c4', state: 'output-denied', input: 'not json' },
          { type: 'step-start' },
          { type: 'text', text: 'Done.', state: 'done' },
        ],
      },
    ]);
  });

  it('marks the calls of open approve tickets approval-requested (approval id: the ticket id); other tickets stay input-available', () => {
    const ticket = (id: string, toolCallId: string, action: string) =>
      ({ id, toolCallId, action }) as unknown as SuspensionTicket;
    const records = [
      record({ id: 'u1', role: 'user', content: [{ type: 'text', text: 'go' }] }, 'r2'),
      record(
        {
          id: 'a1',
          role: 'assistant',
          content: [call('c1', 'read_file', '{}'), call('c2', 'ask_user', '{}')],
        },
        'r2',
      ),
    ];
    const [, assistant] = toChatUIMessages(records, {
      openTickets: [ticket('k1', 'c1', 'approve'), ticket('k2', 'c2', 'input')],
      dynamicTool: () => false,
    });
    expect(assistant?.parts.slice(1)).toEqual([
      {
        type: 'tool-read_file',
        toolCallId: 'c1',
        state: 'approval-requested',
        input: {},
        approval: { id: 'k1' },
      },
      { type: 'tool-ask_user', toolCallId: 'c2', state: 'input-available', input: {} },
    ]);
  });
});
