import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const directory = mkdtempSync(join(tmpdir(), 'lunation-otel-processes-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

const fixture = fileURLToPath(new URL('./__fixtures__/traced-process.ts', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

interface ProcessOutput {
  pid: number;
  result: { runId: string; status: string; ticketId?: string };
  spans: Array<{
    name: string;
    traceId: string;
    spanId: string;
    parentSpanId?: string;
    links: Array<{
      traceId: string;
      spanId: string;
      isRemote?: boolean;
      attributes?: Record<string, unknown>;
    }>;
    runId?: string;
    events: string[];
  }>;
}

/** Runs the fixture in a process of its own (from source) and reads the JSON line it prints. */
function runProcess(args: string[]): Promise<ProcessOutput> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--conditions=@lunation/source', '--import', tsx, fixture, ...args],
      { timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout.trim().split('\n').at(-1) as string) as ProcessOutput);
      },
    );
  });
}

describe('a resume in another process', () => {
  it('starts a trace of its own that links to the span of the run that suspended', async () => {
    const path = join(directory, 'janitor.db');
    const first = await runProcess(['suspend', path]);
    expect(first.result.status).toBe('waiting');
    const second = await runProcess(['resume', path, first.result.ticketId as string]);
    expect(second.pid).not.toBe(first.pid);
    expect(second.result).toEqual({ runId: first.result.runId, status: 'done' });

    const suspended = first.spans.filter((span) => span.name === 'invoke_agent janitor');
    const resumed = second.spans.filter((span) => span.name === 'invoke_agent janitor');
    expect(suspended).toHaveLength(1);
    expect(resumed).toHaveLength(1);
    expect(suspended[0]?.events).toContain('lunation.run.suspend');
    expect(resumed[0]?.events).toContain('lunation.run.resume');
    expect(resumed[0]?.runId).toBe(first.result.runId);
    expect(resumed[0]?.parentSpanId).toBeUndefined();
    expect(resumed[0]?.traceId).not.toBe(suspended[0]?.traceId);
    expect(resumed[0]?.links).toEqual([
      {
        traceId: suspended[0]?.traceId,
        spanId: suspended[0]?.spanId,
        traceFlags: 1,
        isRemote: true,
        attributes: { 'lunation.link.type': 'resumes' },
      },
    ]);
    expect(second.spans.map((span) => span.name).sort()).toEqual([
      'chat scripted',
      'execute_tool delete_file',
      'invoke_agent janitor',
    ]);
  });
});
