import type { AgentEvent } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { EventStream } from '../src/event-stream.js';

const identity = { threadId: 't', runId: 'r', agentId: 'a', origin: 'user' as const };

function stepStart(step: number): AgentEvent {
  return { type: 'step-start', step, identity, seq: step } as AgentEvent;
}

function steps(events: AgentEvent[]): number[] {
  return events.map((event) => (event as { step: number }).step);
}

/** Lets pending promise reactions run. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) await Promise.resolve();
}

async function collect(iterable: AsyncIterable<AgentEvent>): Promise<AgentEvent[]> {
  const seen: AgentEvent[] = [];
  for await (const event of iterable) seen.push(event);
  return seen;
}

describe('EventStream', () => {
  it('gives a late consumer every event from the start, then new ones as they come, until it closes', async () => {
    const stream = new EventStream();
    stream.push(stepStart(1));
    stream.push(stepStart(2));
    const seen = collect(stream);
    await settle();
    stream.push(stepStart(3));
    await settle();
    stream.push(stepStart(4));
    stream.close();
    expect(steps(await seen)).toEqual([1, 2, 3, 4]);
  });

  it('wakes every iterator that waits at the same time, each with each event once', async () => {
    const stream = new EventStream();
    const first = collect(stream);
    const second = collect(stream);
    const third = collect(stream);
    await settle();
    for (let step = 1; step <= 3; step++) {
      stream.push(stepStart(step));
      await settle();
    }
    stream.close();
    const all = await Promise.all([first, second, third]);
    expect(all.map(steps)).toEqual([
      [1, 2, 3],
      [1, 2, 3],
      [1, 2, 3],
    ]);
  });

  it('ends a waiting next() when the iterator returns, and keeps buffering for other iterators', async () => {
    const stream = new EventStream();
    const iterator = stream[Symbol.asyncIterator]();
    const pending = iterator.next();
    await expect(iterator.return?.()).resolves.toEqual({ value: undefined, done: true });
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
    stream.push(stepStart(1));
    await expect(iterator.next()).resolves.toEqual({ value: undefined, done: true });
    stream.close();
    expect(steps(await collect(stream))).toEqual([1]);
  });

  it('lets a consumer break early; a new iterator replays the run from the start', async () => {
    const stream = new EventStream();
    for (let step = 1; step <= 4; step++) stream.push(stepStart(step));
    const early: AgentEvent[] = [];
    for await (const event of stream) {
      early.push(event);
      if (early.length === 2) break;
    }
    stream.close();
    expect(steps(early)).toEqual([1, 2]);
    expect(steps(await collect(stream))).toEqual([1, 2, 3, 4]);
    expect(steps([...stream.buffered])).toEqual([1, 2, 3, 4]);
  });

  it('answers next() calls made without waiting in order, one event each', async () => {
    const stream = new EventStream();
    const iterator = stream[Symbol.asyncIterator]();
    const results = Promise.all([iterator.next(), iterator.next(), iterator.next()]);
    stream.push(stepStart(1));
    await settle();
    stream.push(stepStart(2));
    stream.close();
    const [first, second, third] = await results;
    expect([first.value, second.value].map((event) => (event as { step: number }).step)).toEqual([1, 2]);
    expect(third).toEqual({ value: undefined, done: true });
  });

  it('answers done to every next() after the stream closed', async () => {
    const stream = new EventStream();
    const iterator = stream[Symbol.asyncIterator]();
    const pending = iterator.next();
    stream.close();
    await expect(pending).resolves.toEqual({ value: undefined, done: true });
    await expect(iterator.next()).resolves.toEqual({ value: undefined, done: true });
  });
});
