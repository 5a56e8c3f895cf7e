import type { ToolContext } from '@lunation/runtime';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { currentTimeTool } from './current-time-tool.js';

const now = (timeZone?: string) =>
  currentTimeTool.execute(timeZone === undefined ? {} : { timeZone }, {} as ToolContext);

describe('current_time', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date('2026-03-01T23:30:05Z'));
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('tells the time in a given IANA time zone', () => {
    expect(now('Asia/Tokyo')).toEqual({
      timeZone: 'Asia/Tokyo',
      localTime: '2026-03-02 08:30:05',
      weekday: 'Monday',
      utcOffset: 'GMT+9',
      iso: '2026-03-01T23:30:05.000Z',
    });
    expect(now('America/New_York')).toMatchObject({ localTime: '2026-03-01 18:30:05', utcOffset: 'GMT-5' });
  });

  it('uses the local time zone by default', () => {
    expect(now()).toMatchObject({
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      iso: '2026-03-01T23:30:05.000Z',
    });
  });

  it('refuses an unknown time zone with a hint', () => {
    expect(() => now('Mars/Olympus')).toThrow(
      'Unknown time zone "Mars/Olympus"; use an IANA name such as "Europe/Paris" or "America/New_York"',
    );
  });
});
