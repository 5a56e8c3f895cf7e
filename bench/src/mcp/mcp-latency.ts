/**
 * MCP latency: `pnpm --filter @lunation/bench run bench:mcp` (after `pnpm build`).
 *
 * W1's tool loop (one agent, no store, the scripted model calls `add({a:1,b:2})` at steps 1..S-1 and answers
 * "done" at step S, S = 10, non-streaming) with `add` as a plain tool (`defineTool`), and as the `add` tool of
 * an MCP server written with the official SDK (`add-server.ts`, its own process) reached through
 * `@lunation/mcp` over stdio and over Streamable HTTP (loopback), each at 2026-07-28 and 2025. An MCP call's
 * added latency = (µs per run with MCP − µs per run with the plain tool) / (S − 1), the plain tool timed again
 * right before each variant (the machine is shared: its load drifts). Beside it, the SDK
 * client's own `callTool` round trip to the same server (no Lunation), so the share of the protocol and of
 * Lunation's wrapper can be told apart. Writes bench/results/mcp.json.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ModelRequest } from '@lunation/contract';
import { type McpServerConfig, McpToolset } from '@lunation/mcp';
import { type AnyTool, createRuntime, defineTool } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { z } from 'zod';
import { benchDir, lunationFrom } from '../machine.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '30' },
    rounds: { type: 'string', default: '5' },
  },
  strict: true,
});
const runs = Number(values.runs);
const warmup = Number(values.warmup);
const rounds = Number(values.rounds);
const STEPS = 10;
const serverFile = fileURLToPath(new URL('./add-server.ts', import.meta.url));

const plainAdd = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => ({ sum: a + b }),
});

function model(toolName: string) {
  return new ScriptedModel((request: ModelRequest) => {
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    return answered < STEPS - 1 ? callTool(toolName, { a: 1, b: 2 }) : reply('done');
  });
}

/** µs per run (median of `rounds` rounds of `runs` runs), each run checked. */
async function timeRuns(tools: AnyTool[], toolName: string): Promise<number> {
  const runtime = createRuntime().model('m', model(toolName)).agent({ id: 'a', model: 'm', tools }).build();
  let thread = 0;
  const once = async () => {
    const result = await runtime.generate({ threadId: `t${++thread}`, input: 'add' });
    const calls = result.messages.filter((message) => message.role === 'tool').length;
    if (result.finalText !== 'done' || calls !== STEPS - 1) {
      throw new Error(`a run ended "${result.finalText}" after ${calls} tool results`);
    }
    const failed = result.messages
      .filter((message) => message.role === 'tool')
      .flatMap((message) => message.content)
      .find((part) => part.type === 'tool-result' && part.result.status !== 'success');
    if (failed) throw new Error(`a tool call failed: ${JSON.stringify(failed)}`);
  };
  for (let index = 0; index < warmup; index++) await once();
  const perRound: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = process.hrtime.bigint();
    for (let index = 0; index < runs; index++) await once();
    perRound.push(Number(process.hrtime.bigint() - started) / 1_000 / runs);
  }
  return median(perRound);
}

/** µs per `callTool` of the SDK client alone (median of rounds). */
async function timeSdk(client: Client): Promise<number> {
  const call = async () => {
    const result = await client.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
    if ((result.structuredContent as { sum?: number } | undefined)?.sum !== 3) throw new Error('wrong sum');
  };
  for (let index = 0; index < warmup * STEPS; index++) await call();
  const perRound: number[] = [];
  for (let round = 0; round < rounds; round++) {
    const started = process.hrtime.bigint();
    for (let index = 0; index < runs; index++) await call();
    perRound.push(Number(process.hrtime.bigint() - started) / 1_000 / runs);
  }
  return median(perRound);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function startHttpServer(): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', serverFile, 'http'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const match = /"port":(\d+)/.exec(chunk);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the HTTP server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, stop: () => child.kill('SIGTERM') };
}

const stdioServer = { command: process.execPath, args: ['--import', 'tsx', serverFile, 'stdio'] };

interface Figure {
  transport: 'stdio' | 'http';
  protocol: string;
  usPerRun: number;
  plainUsPerRun: number;
  addedUsPerCall: number;
  sdkUsPerCall: number;
}

const http = await startHttpServer();
const figures: Figure[] = [];
try {
  for (const transport of ['stdio', 'http'] as const) {
    for (const protocol of ['auto', 'legacy'] as const) {
      const server: McpServerConfig =
        transport === 'stdio'
          ? { name: 'bench', transport: 'stdio', ...stdioServer, protocol, env: { NODE_OPTIONS: '' } }
          : { name: 'bench', transport: 'http', url: http.url, protocol };
      const plainUsPerRun = await timeRuns([plainAdd], 'add');
      const mcp = await McpToolset.connect({ servers: [server] });
      const version = mcp.protocolVersions().bench ?? 'unknown';
      let usPerRun: number;
      try {
        usPerRun = await timeRuns(mcp.tools(), 'bench__add');
      } finally {
        await mcp.close();
      }
      const client = new Client({ name: 'bench', version: '0' }, { versionNegotiation: { mode: protocol } });
      await client.connect(
        transport === 'stdio'
          ? new StdioClientTransport({ ...stdioServer, stderr: 'ignore' })
          : new StreamableHTTPClientTransport(new URL(http.url)),
      );
      let sdkUsPerCall: number;
      try {
        sdkUsPerCall = await timeSdk(client);
      } finally {
        await client.close();
      }
      const figure: Figure = {
        transport,
        protocol: version,
        usPerRun,
        plainUsPerRun,
        addedUsPerCall: (usPerRun - plainUsPerRun) / (STEPS - 1),
        sdkUsPerCall,
      };
      figures.push(figure);
      console.log(
        `MCP ${transport} ${version}: ${usPerRun.toFixed(0)} µs per run (plain tool ${plainUsPerRun.toFixed(0)}); +${figure.addedUsPerCall.toFixed(0)} µs per call over the plain tool; the SDK client alone ${sdkUsPerCall.toFixed(0)} µs per call`,
      );
    }
  }
} finally {
  http.stop();
}

const loaded = lunationFrom();
writeFileSync(
  join(benchDir, 'results', 'mcp.json'),
  `${JSON.stringify(
    {
      when: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      loadAverage: loadavg(),
      lunationFrom: loaded.from,
      settings: { runs, warmup, rounds, steps: STEPS, store: 'none', streaming: false },
      figures,
    },
    null,
    2,
  )}\n`,
);
console.log(`Lunation from ${loaded.from}; wrote bench/results/mcp.json`);
process.exit(0);
