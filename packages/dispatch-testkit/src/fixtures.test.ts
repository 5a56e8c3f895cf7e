import { agentEventSchema, LunationError, type RunEventRecord, submissionSchema } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  collect,
  eventually,
  expectLunationError,
  makeDecisionsSubmission,
  makeEvents,
  makeSubmission,
  uniqueId,
} from './fixtures.js';

async function* records(count: number, thenWait = false): AsyncGenerator<RunEventRecord> {
  for (const [index, event] of makeEvents('run-1', count).entries()) yield { id: String(index + 1), event };
  if (thenWait) await new Promise(() => {});
}

describe('fixtures', () => {
  it('build submissions and events that pass the contract schemas', () => {
    const submission = makeSubmission('thread-1', { resourceId: 'tenant-a', text: 'hi' });
    expect(submissionSchema.parse(submission)).toEqual(submission);
    expect(submission).toEqual(expect.objectContaining({ threadId: 'thread-1', resourceId: 'tenant-a' }));
    expect(submissionSchema.safeParse(makeDecisionsSubmission('thread-1')).success).toBe(true);
    const events = makeEvents('run-1', 3, 5);
    expect(events.map((event) => agentEventSchema.parse(event).seq)).toEqual([5, 6, 7]);
    expect(new Set([uniqueId(), uniqueId(), makeSubmission('t').id, makeSubmission('t').id]).size).toBe(4);
  });

  it('collect returns what a subscription yielded once it ends, and fails when it does not end in time', async () => {
    expect((await collect(records(3), { timeoutMs: 1_000 })).map((record) => record.id)).toEqual([
      '1',
      '2',
      '3',
    ]);
    const abort = new AbortController();
    const seen: string[] = [];
    await expect(
      collect(records(2, true), { timeoutMs: 100, abort, onRecord: (record) => seen.push(record.id) }),
    ).rejects.toThrow(/ended within 100 ms \(got 2 events\)/);
    expect(seen).toEqual(['1', '2']);
    expect(abort.signal.aborted).toBe(true);
  });

  it('eventually waits for a condition and fails after its timeout', async () => {
    let flag = false;
    setTimeout(() => {
      flag = true;
    }, 30);
    await eventually(() => flag, 1_000, 'the flag');
    await expect(eventually(() => false, 50, 'never')).rejects.toThrow(/waiting for never/);
  });

  it('expectLunationError returns the error of the expected code and fails otherwise', async () => {
    const error = await expectLunationError(
      Promise.reject(new LunationError('claim-lost', 'gone')),
      'claim-lost',
    );
    expect(error.message).toBe('gone');
    await expect(expectLunationError(Promise.resolve(1), 'claim-lost')).rejects.toThrow(/resolved with 1/);
    await expect(expectLunationError(Promise.reject(new Error('plain')), 'claim-lost')).rejects.toThrow(
      /but got Error: plain/,
    );
    await expect(
      expectLunationError(Promise.reject(new LunationError('overloaded', 'busy')), 'claim-lost'),
    ).rejects.toThrow(/error code/);
  });
});
