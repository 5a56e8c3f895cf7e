/**
 * The MCP server of the MCP latency bench: one tool `add({a, b}) -> {sum}`, written with the official SDK.
 * `add-server.ts stdio` serves stdio; `add-server.ts http` serves Streamable HTTP on a free loopback port and
 * prints `{"port": n}`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

function addServer(): McpServer {
  const server = new McpServer({ name: 'bench-add', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers',
      inputSchema: z.object({ a: z.number(), b: z.number() }),
      annotations: { readOnlyHint: true },
    },
    async ({ a, b }) => ({
      content: [{ type: 'text', text: JSON.stringify({ sum: a + b }) }],
      structuredContent: { sum: a + b },
    }),
  );
  return server;
}

if (process.argv[2] === 'http') {
  const handler = createMcpHandler(() => addServer(), { responseMode: 'json' });
  const http = createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const method = request.method ?? 'GET';
    const answer = await handler.fetch(
      new Request(`http://127.0.0.1${request.url ?? '/'}`, {
        method,
        headers,
        ...(method === 'GET' || method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }),
      }),
    );
    response.writeHead(answer.status, Object.fromEntries(answer.headers));
    response.end(Buffer.from(await answer.arrayBuffer()));
  });
  http.keepAliveTimeout = 60_000;
  http.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ port: (http.address() as AddressInfo).port })}\n`);
  });
} else {
  serveStdio(() => addServer());
}
