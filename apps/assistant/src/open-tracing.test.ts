import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { reply, ScriptedModel } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import { afterEach, describe, expect, it } from 'vitest';
import { createAssistantRuntime } from './create-assistant-runtime.js';
import { openTracing } from './open-tracing.js';
import { seedSandbox } from './tools/seed-sandbox.js';

interface OtlpRequest {
  path: string;
  contentType: string | undefined;
  authorization: string | undefined;
  body: {
    resourceSpans: Array<{
      resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
      scopeSpans: Array<{
        scope: { name: string };
        spans: Array<{ name: string; attributes: Array<{ key: string; value: Record<string, unknown> }> }>;
      }>;
    }>;
  };
}

/** An OTLP/HTTP collector on loopback that keeps what it receives. */
async function startCollector() {
  const received: OtlpRequest[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        path: request.url ?? '',
        contentType: request.headers['content-type'],
        authorization: request.headers.authorization,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest['body'],
      });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const OTEL_VARIABLES = ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_HEADERS'];

describe('openTracing', () => {
  const saved = new Map(OTEL_VARIABLES.map((name) => [name, process.env[name]]));
  let root: string | undefined;

  afterEach(async () => {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('sends the spans of a run to the OTLP collector the standard variables name', async () => {
    const collector = await startCollector();
    try {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.url;
      process.env.OTEL_EXPORTER_OTLP_HEADERS = 'authorization=Bearer collector-token';
      root = await mkdtemp(join(tmpdir(), 'assistant-tracing-'));
      await seedSandbox(join(root, 'sandbox'));
      const tracing = openTracing('otlp', { OTEL_SERVICE_NAME: 'assistant-under-test' });
      const model = new ScriptedModel([
        { toolCalls: [{ toolName: 'calculator', arguments: { expression: '6 * 7' } }] },
        reply('42'),
      ]);
      const runtime = createAssistantRuntime({
        model,
        store: new MemoryStore(),
        sandbox: join(root, 'sandbox'),
        instrumentation: tracing.instrumentation,
      });
      const result = await runtime.generate({ threadId: 't', input: 'what is 6 * 7?' });
      expect(result.finalText).toBe('42');
      await tracing.shutdown();

      expect(collector.received.length).toBeGreaterThan(0);
      const [first] = collector.received;
      expect(first?.path).toBe('/v1/traces');
      expect(first?.contentType).toBe('application/json');
      expect(first?.authorization).toBe('Bearer collector-token');
      const resources = collector.received.flatMap((request) => request.body.resourceSpans);
      const serviceNames = resources.map(
        (resource) =>
          resource.resource.attributes.find((attribute) => attribute.key === 'service.name')?.value,
      );
      expect(new Set(serviceNames.map((value) => value?.stringValue))).toEqual(
        new Set(['assistant-under-test']),
      );
      const scopes = resources.flatMap((resource) => resource.scopeSpans);
      expect(new Set(scopes.map((scope) => scope.scope.name))).toEqual(new Set(['@lunation/otel']));
      const names = scopes.flatMap((scope) => scope.spans.map((span) => span.name)).sort();
      expect(names).toEqual([
        'chat scripted',
        'chat scripted',
        'execute_tool calculator',
        'invoke_agent assistant',
      ]);
      const run = scopes
        .flatMap((scope) => scope.spans)
        .find((span) => span.name === 'invoke_agent assistant');
      expect(run?.attributes).toContainEqual({ key: 'gen_ai.conversation.id', value: { stringValue: 't' } });
      // Message contents stay out unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
      const keys = scopes.flatMap((scope) =>
        scope.spans.flatMap((span) => span.attributes.map((a) => a.key)),
      );
      expect(keys.filter((key) => key.startsWith('gen_ai.input') || key.startsWith('gen_ai.output'))).toEqual(
        [],
      );
    } finally {
      await collector.close();
    }
  });
});
