import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchDir } from './machine.js';

interface McpFile {
  when: string;
  node: string;
  loadAverage?: number[];
  lunationFrom: string;
  settings: { runs: number; rounds: number; steps: number };
  figures: Array<{
    transport: 'stdio' | 'http';
    protocol: string;
    usPerRun: number;
    plainUsPerRun?: number;
    addedUsPerCall: number;
    sdkUsPerCall: number;
  }>;
}

const format = (value: number) =>
  value.toLocaleString('en-US', { minimumFractionDigits: 0, maximumFractionDigits: 0 });

/** The MCP latency section of docs/benchmarks.md, from its own command (`bench:mcp`, `bench/results/mcp.json`). */
export function mcpSection(): string {
  const intro = [
    '## MCP: an MCP tool call beside a plain tool',
    '',
    "W1's tool loop (S = 10, no store, non-streaming) with `add` as a plain tool and as the `add` tool of an MCP",
    'server written with the official SDK, in its own process, reached through `@lunation/mcp` over stdio and',
    'over Streamable HTTP on loopback, at the 2026-07-28 protocol and at 2025. Added per call = (µs per run with',
    'MCP − µs per run with the plain tool, timed right before) / 9 calls; beside it the SDK client alone',
    '(`client.callTool` in a loop, no Lunation) to the same server. From `pnpm --filter @lunation/bench run',
    "bench:mcp` (`bench/results/mcp.json`), not from the runs above. The server shares the machine's cores.",
  ].join('\n');
  let file: McpFile;
  try {
    file = JSON.parse(readFileSync(join(benchDir, 'results/mcp.json'), 'utf8')) as McpFile;
  } catch {
    return `${intro}\n\nNo MCP results yet.`;
  }
  const load = file.loadAverage
    ? `; load average ${file.loadAverage.map((value) => value.toFixed(1)).join(' / ')}`
    : '';
  const head = [
    'transport',
    'protocol',
    'µs per run (MCP)',
    'µs per run (plain)',
    'added µs per call',
    'SDK alone µs per call',
  ];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`];
  for (const figure of file.figures) {
    lines.push(
      `| ${figure.transport === 'http' ? 'Streamable HTTP' : 'stdio'} | ${figure.protocol} | ${format(figure.usPerRun)} | ${figure.plainUsPerRun === undefined ? '' : format(figure.plainUsPerRun)} | ${format(figure.addedUsPerCall)} | ${format(figure.sdkUsPerCall)} |`,
    );
  }
  return [
    intro,
    `**Node ${file.node.replace(/^v/, '')}** (${file.when.slice(0, 10)}${load} on 2 cores; Lunation from ${file.lunationFrom === 'dist' ? 'its built `dist/`' : 'TypeScript source'}; median of ${file.settings.rounds} rounds of ${file.settings.runs} runs).`,
    lines.join('\n'),
  ].join('\n\n');
}
