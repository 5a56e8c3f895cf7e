import {
  type ErrorCode,
  LunationError,
  type ModelProvider,
  type ModelRequest,
  type ModelStreamPart,
  specificationVersions,
  type Usage,
} from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import {
  assertStreamInvariants,
  type CollectedStream,
  collectStream,
  summarizeParts,
} from './collect-stream.js';
import {
  type ProviderWire,
  reportableUsage,
  type ScriptedEvent,
  type ScriptedResponse,
} from './provider-wire.js';
import { ScriptedServer } from './scripted-server.js';
import { type StructuredOutputConformance, structuredOutputSpecs } from './structured-output-specs.js';
import { typecheckSpec } from './typecheck-spec.js';
import { useScriptedServer } from './use-scripted-server.js';

/** What the kit passes to `createModel`. */
export interface ConformanceModelSettings {
  /** The scripted server's origin, e.g. `http://127.0.0.1:53121` (append the vendor's path prefix if the SDK needs one). */
  baseURL: string;
  /** The adapter's retry budget for this scenario; backoff delays must be a few milliseconds. */
  maxRetries: number;
}

/** Options of {@link runProviderConformance}. */
export interface ProviderConformanceOptions {
  /** Shown in the suite name. */
  name: string;
  /** The adapter's encoder from scripted responses to the vendor's HTTP responses. */
  wire: ProviderWire;
  /** Builds the adapter against the scripted server. */
  createModel: (settings: ConformanceModelSettings) => ModelProvider;
  /**
   * How the suite typechecks the adapter's package (vitest itself does not typecheck, so without it a contract
   * change that breaks the adapter passes): by default with the nearest `tsconfig.json` above the test file that
   * calls the suite (up to its `package.json`); a path or URL names another; `false` skips the check, saying so.
   * The compiler runs beside the other specs and keeps its incremental state in `node_modules/.cache`.
   * @default the nearest tsconfig.json
   */
  tsconfig?: string | URL | false;
  /**
   * How the adapter sends `ModelRequest.responseFormat` (the vendor's request fields and schema rules): with it,
   * the suite runs its structured-output specs (format on every request, tool calls, repair turns, list
   * answers, refusals); without it they are skipped, saying so.
   */
  structuredOutput?: StructuredOutputConformance;
}

const weatherTool = {
  name: 'get_weather',
  description: 'The current weather in a city.',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

const conformanceRequest: ModelRequest = {
  messages: [
    { id: 'm1', role: 'system', content: [{ type: 'text', text: 'You are terse.' }] },
    { id: 'm2', role: 'user', content: [{ type: 'text', text: 'Weather in Paris, Oslo and Rome?' }] },
  ],
  tools: [weatherTool],
};

const textUsage: Usage = {
  inputTokens: 21,
  outputTokens: 7,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
};

/** HTTP status, the scripted body, and the code and retryability the adapter must report. */
const errorTable: ReadonlyArray<{
  status: number;
  code: ErrorCode;
  retryable: boolean;
  contextOverflow?: boolean;
}> = [
  { status: 400, code: 'invalid-request', retryable: false },
  { status: 400, code: 'context-overflow', retryable: false, contextOverflow: true },
  { status: 401, code: 'unauthorized', retryable: false },
  { status: 403, code: 'unauthorized', retryable: false },
  { status: 404, code: 'model-not-found', retryable: false },
  { status: 408, code: 'timeout', retryable: true },
  { status: 413, code: 'invalid-request', retryable: false },
  { status: 422, code: 'invalid-request', retryable: false },
  { status: 429, code: 'rate-limited', retryable: true },
  { status: 500, code: 'provider-error', retryable: true },
  { status: 502, code: 'provider-error', retryable: true },
  { status: 503, code: 'overloaded', retryable: true },
  { status: 504, code: 'timeout', retryable: true },
  { status: 529, code: 'overloaded', retryable: true },
];

/**
 * The conformance suite every model provider adapter runs: stream-part order and counts, tool-call
 * accumulation, reasoning, usage, stop reasons, HTTP error mapping, retries, abort and cut streams, and
 * structured output (`responseFormat`).
 * Call it at the top level of a `*.test.ts` file; it registers its own `describe` block.
 */
export function runProviderConformance(options: ProviderConformanceOptions): void {
  const { wire, createModel } = options;
  const capabilities = wire.capabilities;
  const wholeCalls = capabilities.toolCallArguments === 'whole';
  if (wholeCalls && capabilities.interleavedToolCalls) {
    throw new Error(
      `${options.name}: a wire that sends each tool call whole (toolCallArguments: 'whole') cannot interleave argument pieces; set interleavedToolCalls: false`,
    );
  }
  /** The arguments as the adapter must report them: the same text, or (whole calls) the same JSON value. */
  const expectArguments = (actual: string | undefined, expected: string, label: string) => {
    if (wholeCalls) expect(parseJson(actual, label), label).toEqual(JSON.parse(expected));
    else expect(actual, label).toBe(expected);
  };

  describe(`${options.name} provider conformance`, () => {
    const server = useScriptedServer();

    const model = (maxRetries = 0) => createModel({ baseURL: server.url, maxRetries });

    async function run(
      responses: ScriptedResponse[],
      settings: { maxRetries?: number; signal?: AbortSignal; onPart?: (part: ModelStreamPart) => void } = {},
    ): Promise<CollectedStream> {
      server.enqueue(...responses.map((response) => wire.encode(response)));
      const stream = model(settings.maxRetries).stream(conformanceRequest, { signal: settings.signal });
      return collectStream(stream, settings.onPart);
    }

    function expectLunationError(error: unknown, code: ErrorCode): LunationError {
      expect(
        LunationError.isInstance(error),
        `expected a LunationError "${code}", got ${String(error)}`,
      ).toBe(true);
      const lunationError = error as LunationError;
      expect(lunationError.code).toBe(code);
      return lunationError;
    }

    it('declares the model specification version of this contract, a provider id and a model id', () => {
      const instance = model();
      expect(instance.specificationVersion).toBe(specificationVersions.model);
      expect(instance.provider).toMatch(/\S/);
      expect(instance.modelId).toMatch(/\S/);
    });

    it('streams text deltas in order, then one usage, then one finish', async () => {
      const { parts, error } = await run([
        {
          type: 'stream',
          events: [
            { type: 'text', text: 'Hel' },
            { type: 'text', text: 'lo' },
            { type: 'text', text: ', world' },
          ],
          usage: textUsage,
        },
      ]);
      expect(error).toBeUndefined();
      assertStreamInvariants(parts);
      // An empty delta that only carries providerMetadata closes a text block (contract); it adds no text.
      const textDeltas = parts.filter(
        (part) => part.type === 'text-delta' && (part.delta !== '' || part.providerMetadata === undefined),
      );
      expect(textDeltas.map((part) => (part.type === 'text-delta' ? part.delta : ''))).toEqual([
        'Hel',
        'lo',
        ', world',
      ]);
      expect(parts.slice(-2).map((part) => part.type)).toEqual(['usage', 'finish']);
      const summary = summarizeParts(parts);
      expect(summary.types.filter((type) => type === 'finish')).toHaveLength(1);
      expect(summary.usage).toEqual(textUsage);
      expect(summary.stopReason).toBe('end-turn');
      expect(server.requests).toHaveLength(1);
    });

    it('streams one tool call as start, argument pieces and an end carrying the whole arguments', async () => {
      const { parts, error } = await run([
        {
          type: 'stream',
          events: [
            { type: 'tool-call-start', toolCallId: 'call_1', toolName: 'get_weather' },
            { type: 'tool-call-delta', toolCallId: 'call_1', argumentsDelta: '{"ci' },
            { type: 'tool-call-delta', toolCallId: 'call_1', argumentsDelta: 'ty": "Pa' },
            { type: 'tool-call-delta', toolCallId: 'call_1', argumentsDelta: 'ris"}' },
          ],
          usage: textUsage,
        },
      ]);
      expect(error).toBeUndefined();
      assertStreamInvariants(parts);
      const summary = summarizeParts(parts);
      const pieces = wholeCalls ? 1 : 3;
      expect(summary.toolCalls).toEqual([
        {
          toolCallId: 'call_1',
          toolName: 'get_weather',
          arguments: expect.any(String),
          streamedArguments: summary.toolCalls[0]?.arguments,
          deltaCount: pieces,
        },
      ]);
      expectArguments(summary.toolCalls[0]?.arguments, '{"city": "Paris"}', 'call_1 arguments');
      expect(summary.types).toEqual([
        'tool-call-start',
        ...Array.from({ length: pieces }, () => 'tool-call-delta' as const),
        'tool-call-end',
        'usage',
        'finish',
      ]);
      expect(summary.stopReason).toBe('tool-use');
    });

    it('streams parallel tool calls whose argument pieces arrive interleaved', async () => {
      const events: ScriptedEvent[] = [
        { type: 'tool-call-start', toolCallId: 'call_a', toolName: 'get_weather' },
        { type: 'tool-call-delta', toolCallId: 'call_a', argumentsDelta: '{"city":' },
        { type: 'tool-call-start', toolCallId: 'call_b', toolName: 'get_weather' },
        { type: 'tool-call-delta', toolCallId: 'call_b', argumentsDelta: '{"city":' },
        { type: 'tool-call-start', toolCallId: 'call_c', toolName: 'get_weather' },
        { type: 'tool-call-delta', toolCallId: 'call_a', argumentsDelta: ' "Paris"}' },
        { type: 'tool-call-delta', toolCallId: 'call_c', argumentsDelta: '{"city": "Rome"}' },
        { type: 'tool-call-delta', toolCallId: 'call_b', argumentsDelta: ' "Oslo"}' },
      ];
      const { parts, error } = await run([{ type: 'stream', events, usage: textUsage }]);
      expect(error).toBeUndefined();
      assertStreamInvariants(parts);
      const summary = summarizeParts(parts);
      expect(summary.toolCalls.map(({ toolCallId, toolName }) => ({ toolCallId, toolName }))).toEqual([
        { toolCallId: 'call_a', toolName: 'get_weather' },
        { toolCallId: 'call_b', toolName: 'get_weather' },
        { toolCallId: 'call_c', toolName: 'get_weather' },
      ]);
      expectArguments(summary.toolCalls[0]?.arguments, '{"city": "Paris"}', 'call_a arguments');
      expectArguments(summary.toolCalls[1]?.arguments, '{"city": "Oslo"}', 'call_b arguments');
      expectArguments(summary.toolCalls[2]?.arguments, '{"city": "Rome"}', 'call_c arguments');
      expect(parts.filter((part) => part.type === 'tool-call-delta')).toHaveLength(wholeCalls ? 3 : 5);
      expect(parts.filter((part) => part.type === 'tool-call-end')).toHaveLength(3);
      if (capabilities.interleavedToolCalls) {
        const deltaOrder = parts.flatMap((part) =>
          part.type === 'tool-call-delta' ? [part.toolCallId] : [],
        );
        expect(deltaOrder).toEqual(['call_a', 'call_b', 'call_a', 'call_c', 'call_b']);
      }
      expect(summary.stopReason).toBe('tool-use');
    });

    it.skipIf(!capabilities.reasoning)(
      'streams reasoning, with its signature where the wire has one, before the answer [needs capabilities.reasoning]',
      async () => {
        const events: ScriptedEvent[] = [
          { type: 'reasoning', text: 'The user wants ' },
          { type: 'reasoning', text: 'a greeting.' },
          ...(capabilities.reasoningSignature
            ? [{ type: 'reasoning-signature', signature: 'sig-Ek0xQ1' } as const]
            : []),
          { type: 'text', text: 'Hello!' },
        ];
        const { parts, error } = await run([{ type: 'stream', events, usage: textUsage }]);
        expect(error).toBeUndefined();
        assertStreamInvariants(parts);
        const summary = summarizeParts(parts);
        expect(summary.reasoning).toEqual([
          capabilities.reasoningSignature
            ? { text: 'The user wants a greeting.', signature: 'sig-Ek0xQ1' }
            : { text: 'The user wants a greeting.' },
        ]);
        expect(summary.text).toBe('Hello!');
        const lastReasoning = summary.types.lastIndexOf('reasoning-delta');
        expect(lastReasoning).toBeLessThan(summary.types.indexOf('text-delta'));
      },
    );

    it.skipIf(!capabilities.redactedReasoning)(
      'passes a redacted reasoning block through as one opaque, redacted part [needs capabilities.redactedReasoning]',
      async () => {
        const { parts, error } = await run([
          {
            type: 'stream',
            events: [
              { type: 'redacted-reasoning', data: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT' },
              { type: 'text', text: 'Done.' },
            ],
            usage: textUsage,
          },
        ]);
        expect(error).toBeUndefined();
        assertStreamInvariants(parts);
        expect(summarizeParts(parts).reasoning).toEqual([
          { text: 'EmwKAhgBEgy3va3pzix/LafPsn4aDFIT', redacted: true },
        ]);
      },
    );

    it(`reports usage including cache and reasoning tokens${
      capabilities.unreportedUsage?.length
        ? ` (0 for what the wire lacks: ${capabilities.unreportedUsage.join(', ')})`
        : ''
    }`, async () => {
      const usage: Usage = {
        inputTokens: 2_048,
        outputTokens: 300,
        cacheReadTokens: 1_024,
        cacheWriteTokens: 512,
        reasoningTokens: 128,
      };
      const { parts, error } = await run([{ type: 'stream', events: [{ type: 'text', text: 'ok' }], usage }]);
      expect(error).toBeUndefined();
      const usageParts = parts.filter((part) => part.type === 'usage');
      expect(usageParts).toEqual([{ type: 'usage', usage: reportableUsage(usage, capabilities) }]);
    });

    it('maps every stop reason the wire can express', async () => {
      for (const stopReason of capabilities.stopReasons) {
        server.reset();
        const events: ScriptedEvent[] =
          stopReason === 'tool-use'
            ? [
                { type: 'tool-call-start', toolCallId: 'call_s', toolName: 'get_weather' },
                { type: 'tool-call-delta', toolCallId: 'call_s', argumentsDelta: '{"city":"Paris"}' },
              ]
            : [{ type: 'text', text: 'Partial' }];
        const { parts, error } = await run([{ type: 'stream', events, stopReason, usage: textUsage }]);
        expect(error, `stop reason ${stopReason}`).toBeUndefined();
        assertStreamInvariants(parts);
        expect(summarizeParts(parts).stopReason, `stop reason ${stopReason}`).toBe(stopReason);
      }
    });

    for (const { status, code, retryable, contextOverflow } of errorTable) {
      const label = contextOverflow ? `${status} saying the prompt is too long` : String(status);
      it(`maps HTTP ${label} to "${code}" (${retryable ? 'retryable' : 'not retryable'})`, async () => {
        const { parts, error } = await run([{ type: 'error', status, contextOverflow }]);
        const lunationError = expectLunationError(error, code);
        expect(lunationError.isRetryable).toBe(retryable);
        expect(lunationError.status).toBe(status);
        expect(lunationError.message.length).toBeGreaterThan(10);
        expect(parts).toEqual([]);
        expect(server.requests).toHaveLength(1);
      });
    }

    it('reads Retry-After seconds, an HTTP date and retry-after-ms into retryAfterMs', async () => {
      const seconds = await run([{ type: 'error', status: 429, headers: { 'retry-after': '7' } }]);
      expect(expectLunationError(seconds.error, 'rate-limited').retryAfterMs).toBe(7_000);

      const date = new Date(Date.now() + 40_000).toUTCString();
      const dated = await run([{ type: 'error', status: 429, headers: { 'retry-after': date } }]);
      const datedMs = expectLunationError(dated.error, 'rate-limited').retryAfterMs;
      expect(datedMs).toBeGreaterThan(30_000);
      expect(datedMs).toBeLessThanOrEqual(40_000);

      const milliseconds = await run([
        { type: 'error', status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '2' } },
      ]);
      expect(expectLunationError(milliseconds.error, 'rate-limited').retryAfterMs).toBe(1_500);
    });

    it('retries retryable errors before the first part and then succeeds', async () => {
      const { parts, error } = await run(
        [
          { type: 'error', status: 503 },
          { type: 'error', status: 429, headers: { 'retry-after-ms': '2' } },
          { type: 'stream', events: [{ type: 'text', text: 'third time' }], usage: textUsage },
        ],
        { maxRetries: 2 },
      );
      expect(error).toBeUndefined();
      expect(summarizeParts(parts).text).toBe('third time');
      expect(server.requests).toHaveLength(3);
    });

    it('gives up after maxRetries retries with the last error', async () => {
      const { error } = await run(
        [
          { type: 'error', status: 503 },
          { type: 'error', status: 500 },
          { type: 'error', status: 529 },
        ],
        { maxRetries: 2 },
      );
      expect(expectLunationError(error, 'overloaded').status).toBe(529);
      expect(server.requests).toHaveLength(3);
    });

    it('does not retry errors that are not retryable', async () => {
      const { error } = await run([{ type: 'error', status: 401 }], { maxRetries: 2 });
      expectLunationError(error, 'unauthorized');
      expect(server.requests).toHaveLength(1);
    });

    it('retries a stream cut before its first part', async () => {
      const { parts, error } = await run(
        [
          { type: 'stream', events: [], ending: 'reset' },
          { type: 'stream', events: [{ type: 'text', text: 'again' }], usage: textUsage },
        ],
        { maxRetries: 1 },
      );
      expect(error).toBeUndefined();
      expect(summarizeParts(parts).text).toBe('again');
      expect(server.requests).toHaveLength(2);
    });

    it('throws a retryable "stream-interrupted" and does not retry when the connection drops after a part', async () => {
      const { parts, error } = await run(
        [
          { type: 'stream', events: [{ type: 'text', text: 'Hel' }], ending: 'reset' },
          { type: 'stream', events: [{ type: 'text', text: 'never served' }] },
        ],
        { maxRetries: 2 },
      );
      const lunationError = expectLunationError(error, 'stream-interrupted');
      expect(lunationError.isRetryable).toBe(true);
      expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
      expect(server.requests).toHaveLength(1);
    });

    it('throws "stream-interrupted" when the response ends cleanly before its final event', async () => {
      const { parts, error } = await run(
        [
          {
            type: 'stream',
            events: [
              { type: 'text', text: 'Hel' },
              { type: 'tool-call-start', toolCallId: 'call_x', toolName: 'get_weather' },
              { type: 'tool-call-delta', toolCallId: 'call_x', argumentsDelta: '{"ci' },
            ],
            ending: 'close',
          },
        ],
        { maxRetries: 2 },
      );
      expectLunationError(error, 'stream-interrupted');
      expect(parts.some((part) => part.type === 'finish' || part.type === 'tool-call-end')).toBe(false);
      expect(server.requests).toHaveLength(1);
    });

    it('aborting mid-stream closes the HTTP stream and throws "cancelled", without retrying', async () => {
      const controller = new AbortController();
      const { parts, error } = await run(
        [{ type: 'stream', events: [{ type: 'text', text: 'Hel' }], ending: 'hang' }],
        { maxRetries: 2, signal: controller.signal, onPart: () => controller.abort() },
      );
      const lunationError = expectLunationError(error, 'cancelled');
      expect(lunationError.isRetryable).toBe(false);
      expect(parts).toEqual([{ type: 'text-delta', delta: 'Hel' }]);
      expect(server.requests).toHaveLength(1);
      expect(await server.requests[0]?.outcome).toBe('client-closed');
    });

    it('an already aborted signal throws "cancelled" without sending a request', async () => {
      const { error } = await run([], { signal: AbortSignal.abort() });
      expectLunationError(error, 'cancelled');
      expect(server.requests).toHaveLength(0);
    });

    it('aborting during the backoff wait throws "cancelled" at once', async () => {
      const controller = new AbortController();
      server.enqueue(wire.encode({ type: 'error', status: 503, headers: { 'retry-after': '25' } }));
      const pending = collectStream(model(2).stream(conformanceRequest, { signal: controller.signal }));
      await waitUntil(() => server.requests.length === 1);
      await server.requests[0]?.outcome;
      setTimeout(() => controller.abort(), 20);
      const { error } = await pending;
      expectLunationError(error, 'cancelled');
      expect(server.requests).toHaveLength(1);
    });

    it('breaking out of the stream early closes the HTTP stream', async () => {
      server.enqueue(
        wire.encode({ type: 'stream', events: [{ type: 'text', text: 'Hel' }], ending: 'hang' }),
      );
      for await (const part of model().stream(conformanceRequest)) {
        expect(part).toEqual({ type: 'text-delta', delta: 'Hel' });
        break;
      }
      expect(await server.requests[0]?.outcome).toBe('client-closed');
    });

    it('reports a refused connection as a retryable "provider-error"', async () => {
      const closed = new ScriptedServer();
      const baseURL = await closed.start();
      await closed.stop();
      const stream = createModel({ baseURL, maxRetries: 0 }).stream(conformanceRequest);
      const { error } = await collectStream(stream);
      expect(expectLunationError(error, 'provider-error').isRetryable).toBe(true);
    });

    describe('structured output', () => {
      const structuredOutput = options.structuredOutput;
      if (structuredOutput === undefined) {
        it.skip('asks for JSON answers in the vendor format [needs options.structuredOutput]', () => {});
        return;
      }
      structuredOutputSpecs({
        server,
        capabilities,
        conformance: structuredOutput,
        run: (responses, request) => {
          server.enqueue(...responses.map((response) => wire.encode(response)));
          return collectStream(model().stream(request));
        },
      });
    });

    typecheckSpec(options.tsconfig);
  });
}

function parseJson(text: string | undefined, label: string): unknown {
  try {
    return JSON.parse(text ?? '');
  } catch {
    throw new Error(`${label}: ${JSON.stringify(text)} is not JSON`);
  }
}

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 500 && !condition(); attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (!condition()) throw new Error('waitUntil: the condition never held');
}
