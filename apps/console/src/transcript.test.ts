import type { AgentEvent, MessageRecord } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { applyEvent, type Entry, settledState, toolKey, transcriptOf } from './transcript.js';

const identity = { threadId: 't1', runId: 'r1', agentId: 'assistant', origin: 'user' } as const;
let seq = 0;
const event = (fields: Record<string, unknown>) =>
  ({ identity, seq: seq++, ...fields }) as unknown as AgentEvent;

describe('the transcript', () => {
  it('streams reasoning and text into one assistant entry, and a tool call from its arguments to its result', () => {
    const events = [
      event({
        type: 'run-start',
        input: [{ id: 'm1', role: 'user', content: [{ type: 'text', text: 'hi' }] }],
        resumed: false,
        timestamp: 0,
      }),
      event({ type: 'step-start', step: 1 }),
      event({ type: 'reasoning-delta', step: 1, delta: 'The user ' }),
      event({ type: 'reasoning-delta', step: 1, delta: 'greets.' }),
      event({ type: 'text-delta', step: 1, delta: 'Hello, ' }),
      event({ type: 'text-delta', step: 1, delta: 'let me add.' }),
      event({ type: 'tool-call-start', step: 1, toolCallId: 'c1', toolName: 'calculator' }),
      event({ type: 'tool-call-delta', step: 1, toolCallId: 'c1', argumentsDelta: '{"expression":' }),
      event({ type: 'tool-call-delta', step: 1, toolCallId: 'c1', argumentsDelta: '"1+1"}' }),
      event({
        type: 'tool-execution-start',
        step: 1,
        toolCallId: 'c1',
        toolName: 'calculator',
        idempotencyKey: 'k',
        rerun: true,
      }),
      event({
        type: 'tool-progress',
        toolCallId: 'c1',
        toolName: 'calculator',
        progress: { done: 1, total: 2 },
      }),
      event({
        type: 'tool-result',
        step: 1,
        toolCallId: 'c1',
        toolName: 'calculator',
        status: 'completed',
        result: { status: 'success', data: { result: 2 } },
        fromLedger: true,
      }),
      event({ type: 'text-delta', step: 2, delta: 'It is 2.' }),
    ];
    const entries = events.reduce<Entry[]>((current, next) => applyEvent(current, next), []);
    expect(entries.map((entry) => entry.kind)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(entries[1]).toMatchObject({ text: 'Hello, let me add.', reasoning: 'The user greets.' });
    expect(entries[2]).toMatchObject({
      toolName: 'calculator',
      arguments: '{"expression":"1+1"}',
      state: 'done',
      rerun: true,
      fromLedger: true,
      progress: { done: 1, total: 2 },
      result: { data: { result: 2 } },
    });
    expect(entries[3]).toMatchObject({ text: 'It is 2.' });
  });

  it('resumes a call of the history in place: a decided call updates its waiting entry', () => {
    const records = [
      {
        threadId: 't1',
        seq: 1,
        createdAt: 0,
        message: { id: 'm1', role: 'user', content: [{ type: 'text', text: 'read it' }] },
      },
      {
        threadId: 't1',
        seq: 2,
        createdAt: 0,
        message: {
          id: 'm2',
          role: 'assistant',
          content: [
            { type: 'tool-call', toolCallId: 'c9', toolName: 'read_file', arguments: '{"path":"a"}' },
          ],
        },
      },
    ] as unknown as MessageRecord[];
    const history = transcriptOf(records);
    expect(history.map((entry) => entry.kind)).toEqual(['user', 'tool']);
    expect(history[1]).toMatchObject({ state: 'waiting' });
    const resumed = [
      event({
        type: 'tool-execution-start',
        step: 1,
        toolCallId: 'c9',
        toolName: 'read_file',
        idempotencyKey: 'k',
        rerun: false,
      }),
      event({
        type: 'tool-result',
        step: 1,
        toolCallId: 'c9',
        toolName: 'read_file',
        status: 'completed',
        result: { status: 'success', data: 'x' },
        fromLedger: false,
      }),
    ].reduce<Entry[]>((current, next) => applyEvent(current, next), history);
    expect(resumed.filter((entry) => entry.kind === 'tool')).toHaveLength(1);
    expect(resumed[1]).toMatchObject({ state: 'done', result: { data: 'x' } });
  });

  it('shows a stopped or superseded call as stopped and a denied one as declined, not as failed', () => {
    expect(settledState({ status: 'success', data: 1 })).toBe('done');
    expect(settledState({ status: 'error', message: 'boom' })).toBe('error');
    expect(
      settledState({
        status: 'error',
        message: 'Cancelled: the run was cancelled while this call ran.',
        metadata: { cancelled: true },
      }),
    ).toBe('stopped');
    expect(settledState({ status: 'error', message: 'Cancelled', metadata: { superseded: true } })).toBe(
      'stopped',
    );
    expect(settledState({ status: 'error', message: 'Denied', metadata: { declined: true } })).toBe(
      'declined',
    );
  });

  it('keys a call the same from the store and live, and keeps keys unique when a call id repeats', () => {
    const call = (seq: number, runId: string) =>
      ({
        seq,
        runId,
        message: {
          id: `m${seq}`,
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: 'call_0', toolName: 'calculator', arguments: '{}' }],
        },
      }) as unknown as MessageRecord;
    const history = transcriptOf([call(1, 'r1'), call(3, 'r2')]);
    expect(history.map((entry) => entry.key)).toEqual([toolKey('call_0'), `${toolKey('call_0')}:m3`]);
    const live = applyEvent([], event({ type: 'tool-call-start', step: 1, toolCallId: 'c7', toolName: 'x' }));
    expect(live[0]?.key).toBe(toolKey('c7'));
  });
});
