import { describe, expect, it } from 'vitest';
import { driverProblem, driverVersion } from './driver-support.js';

describe('driverProblem', () => {
  it('accepts 12 up to Node 24.18 and 13 from Node 22', () => {
    expect(driverProblem('12.11.1', 'v20.19.0')).toBeUndefined();
    expect(driverProblem('12.11.1', 'v22.12.0')).toBeUndefined();
    expect(driverProblem('12.11.1', 'v24.18.1')).toBeUndefined();
    expect(driverProblem('13.2.0', 'v22.0.0')).toBeUndefined();
    expect(driverProblem('13.2.0', 'v24.21.0')).toBeUndefined();
    expect(driverProblem('13.2.0', 'v26.4.0')).toBeUndefined();
  });

  it('refuses 12 on Node 24.19 and later, naming the fix', () => {
    expect(driverProblem('12.11.1', 'v24.19.0')).toMatch(
      /^better-sqlite3 12\.11\.1 can abort .* better-sqlite3@13\)$/,
    );
    expect(driverProblem('11.10.0', 'v26.4.0')).toContain('install better-sqlite3 13');
  });

  it('refuses 13 on Node 20, naming the fix', () => {
    expect(driverProblem('13.0.0', 'v20.20.2')).toBe(
      'better-sqlite3 13.0.0 needs Node 22 or later and crashes on Node v20.20.2; install better-sqlite3 12 (npm install better-sqlite3@12)',
    );
  });

  it('reads the version of the installed driver', () => {
    expect(driverVersion()).toMatch(/^1[23]\.\d+\.\d+/);
  });
});
