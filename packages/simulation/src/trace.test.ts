import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Trace } from './trace.js';

describe('Trace', () => {
  it('hashes every line recorded, however many (the SHA-256 of the lines, each ending in a newline)', () => {
    const trace = new Trace();
    const lines = Array.from(
      { length: 5_000 },
      (_, index) => `${index} w1.1 store.getRun thread-1-run-${index} = ok`,
    );
    for (const line of lines) trace.record(line);
    const expected = createHash('sha256')
      .update(lines.map((line) => `${line}\n`).join(''))
      .digest('hex');
    expect(trace.hash()).toBe(expected);
    expect(trace.length).toBe(5_000);
    expect(trace.lines()).toEqual(lines.slice(-200));
  });

  it('names random ids by the order they first appeared in, in the lines and the hash', () => {
    const trace = new Trace({ keepAll: true });
    trace.record('submit 0f8fad5b-d9cb-469f-a165-70867728950e-1a');
    trace.record('claim 6ba7b810-9dad-11d1-80b4-00c04fd430c8 0f8fad5b-d9cb-469f-a165-70867728950e-1a');
    expect(trace.lines()).toEqual(['submit #1', 'claim #2 #1']);
    expect(trace.hash()).toBe(createHash('sha256').update('submit #1\nclaim #2 #1\n').digest('hex'));
    expect(() => trace.record('late')).toThrow();
  });

  it('off, keeps no line and has no hash, but counts the lines', () => {
    const trace = new Trace({ off: true, keepAll: true });
    trace.record('submit 0f8fad5b-d9cb-469f-a165-70867728950e-1a');
    trace.record('claim');
    expect(trace.recording).toBe(false);
    expect(trace.length).toBe(2);
    expect(trace.lines()).toEqual([]);
    expect(() => trace.hash()).toThrow(/off/);
  });
});
