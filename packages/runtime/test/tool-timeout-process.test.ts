import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const fixture = fileURLToPath(new URL('./fixtures/hung-tool.ts', import.meta.url));

/** Runs the fixture in its own process (nothing else keeps its event loop alive), at most 20 s. */
function runFixture(config: { hangOnCall: number; calls: number }) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--conditions=@lunation/source', '--import', 'tsx', fixture, JSON.stringify(config)],
      { timeout: 20_000, env: { ...process.env, NODE_OPTIONS: '' } },
      (error, stdout, stderr) => resolve({ code: error ? (error.code as number | null) : 0, stdout, stderr }),
    );
  });
}

describe('a tool call that never settles, in a process with nothing else to do', () => {
  // The tool clock's timer was left unreferenced after the run's first call finished, so a later call's
  // timeout did not keep the process alive: it exited (code 13, unsettled top-level await) instead.
  it.each([1, 2, 3])('times out and the run goes on when it is call %i of the run', async (hangOnCall) => {
    const { code, stdout, stderr } = await runFixture({ hangOnCall, calls: 3 });
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const results = Array.from({ length: 3 }, (_, index) =>
      index + 1 === hangOnCall
        ? 'Tool "wait" timed out after 200 ms and did not stop; it was abandoned and its outcome is unknown.'
        : 'success',
    );
    expect(JSON.parse(stdout)).toEqual({ termination: 'natural-end', results });
  });
});
