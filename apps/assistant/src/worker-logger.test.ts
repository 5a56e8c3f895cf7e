import { Writable } from 'node:stream';
import type { WorkerLogEntry } from '@lunation/fleet';
import { describe, expect, it } from 'vitest';
import { createWorkerLogger } from './worker-logger.js';

/** A logger writing into an array of parsed lines. */
function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: createWorkerLogger({ workerId: 'host:7', destination }) };
}

const lease = { leaseToken: 12, owner: 'assistant-worker@host:data', incarnation: 'inc-2' };
const recovered: WorkerLogEntry = {
  level: 'info',
  event: 'run-started',
  message: 'run r1 of thread t1 recovered',
  workerId: 'host:7',
  threadId: 't1',
  runId: 'r1',
  attempt: 1,
  how: 'recovered',
  ...lease,
};

describe('the worker logger', () => {
  it('writes pino JSON lines with the process, the level as a word, ISO time and the message', () => {
    const { lines, logger } = capture();
    logger.entry({ ...recovered, how: 'started', waitedMs: 3 });
    expect(lines).toEqual([
      {
        level: 'info',
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        pid: process.pid,
        hostname: expect.any(String),
        workerId: 'host:7',
        event: 'run-started',
        threadId: 't1',
        runId: 'r1',
        attempt: 1,
        how: 'started',
        waitedMs: 3,
        ...lease,
        message: 'run r1 of thread t1 recovered',
      },
    ]);
  });

  it('adds a run-takeover line to a recovered run, and tool-rerun lines with its lease', () => {
    const { lines, logger } = capture();
    logger.entry(recovered);
    const run = logger.instrumentation.runStarted({
      identity: { threadId: 't1', runId: 'r1', agentId: 'assistant', origin: 'user' },
      provider: 'demo',
      model: 'demo',
      resumed: true,
      input: [],
      lease: { token: 12, takeover: true },
    });
    const call = {
      step: 1,
      toolCallId: 'c1',
      toolName: 'slow_task',
      arguments: '{}',
      idempotencyKey: 'r1:c1',
    };
    run?.toolCallStarted({ ...call, rerun: false, attempt: 1 });
    run?.toolCallStarted({ ...call, rerun: true, attempt: 2 });
    logger.entry({ ...recovered, level: 'debug', event: 'claim-taken' });
    expect(lines.map((line) => line.event)).toEqual(['run-started', 'run-takeover', 'tool-rerun']);
    expect(lines[1]).toMatchObject({
      level: 'warn',
      threadId: 't1',
      runId: 'r1',
      pid: process.pid,
      ...lease,
    });
    expect(lines[1]).not.toHaveProperty('how');
    expect(lines[2]).toMatchObject({
      level: 'warn',
      threadId: 't1',
      runId: 'r1',
      toolName: 'slow_task',
      toolCallId: 'c1',
      idempotencyKey: 'r1:c1',
      attempt: 2,
      ...lease,
    });
  });
});
