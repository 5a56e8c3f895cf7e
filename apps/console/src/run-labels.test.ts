import { describe, expect, it } from 'vitest';
import { startedAt } from './run-labels.js';

describe('run labels', () => {
  it('shows the time of a run started today, and the date too for an older one', () => {
    const now = new Date(2026, 10, 29, 15, 0, 0).getTime();
    const today = new Date(2026, 10, 29, 14, 2, 11).getTime();
    const older = new Date(2026, 10, 27, 9, 5, 0).getTime();
    // The clock follows the locale (12 or 24 hours): minutes and seconds are the same in both.
    expect(startedAt(today, now)).toMatch(/\b0?2:02:11|14:02:11/);
    expect(startedAt(today, now)).not.toMatch(/27|29/);
    expect(startedAt(older, now)).toMatch(/27/);
    expect(startedAt(older, now)).toMatch(/0?9:05:00/);
  });
});
