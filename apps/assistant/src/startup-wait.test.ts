import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { withStartupWait } from './startup-wait.js';

describe('withStartupWait', () => {
  it('tries again after a failure until the opening answers, giving each attempt at most the time left', async () => {
    const timeouts: number[] = [];
    const lines: string[] = [];
    const opened = await withStartupWait(
      'Redis',
      async (timeoutMs) => {
        timeouts.push(timeoutMs);
        if (timeouts.length < 3)
          throw new Error('no answer within 5000 ms; check that the server is running');
        return 'store';
      },
      { waitMs: 10_000, log: (line) => lines.push(line) },
    );
    expect(opened).toBe('store');
    expect(timeouts).toHaveLength(3);
    for (const timeout of timeouts) expect(timeout).toBeLessThanOrEqual(5_000);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^ {2}Redis did not answer yet \(no answer within 5000 ms; .*\); trying again for up to \d+ s$/,
    );
  });

  it('gives up once the wait is over with store-unavailable, saying how to wait longer', async () => {
    let attempts = 0;
    const failing = withStartupWait(
      'PostgreSQL',
      async () => {
        attempts++;
        throw new Error('connection refused');
      },
      { waitMs: 600 },
    );
    const error = await failing.catch((caught: unknown) => caught);
    expect(LunationError.hasCode(error, 'store-unavailable')).toBe(true);
    expect((error as Error).message).toMatch(
      /^connection refused \(tried \d+ times over 1 s; wait longer with --startup-wait <seconds> or ASSISTANT_STARTUP_WAIT\)$/,
    );
    expect(attempts).toBeGreaterThan(1);
  });
});
