import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content?: unknown }>;
  tools?: Array<{ function: { name: string } }>;
}

/** A local OpenAI-compatible server. */
export interface QuickStartServer {
  /** The base URL to pass as `OPENAI_BASE_URL`, ending in `/v1`. */
  baseURL: string;
  /** The bodies of the chat completion requests received. */
  requests: ChatRequest[];
  close(): Promise<void>;
}

const sse = (data: unknown) => `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;

const base = (model: string) => ({
  id: 'chatcmpl-quick-start',
  object: 'chat.completion.chunk',
  created: 1,
  model,
});

function chunk(model: string, delta: Record<string, unknown>, finishReason: string | null = null) {
  return sse({ ...base(model), choices: [{ index: 0, delta, finish_reason: finishReason }] });
}

/** The usage chunk (sent for `stream_options.include_usage`) and the end of the stream. */
function end(model: string) {
  const usage = { prompt_tokens: 20, completion_tokens: 8, total_tokens: 28 };
  return sse({ ...base(model), choices: [], usage }) + sse('[DONE]');
}

/**
 * Plays the model of the runtime README's quick start over the OpenAI wire format (Chat Completions, streamed):
 * asked "What is A + B?" with an `add` tool, it calls `add` with `{ a: A, b: B }`, then answers
 * "A + B = <the tool's sum>." from the tool result.
 */
function answer(request: ChatRequest): string {
  const { model, messages } = request;
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const sum = (JSON.parse(String(last.content)) as { sum: number }).sum;
    const question = messages.findLast((message) => message.role === 'user');
    const [a, b] = String(JSON.stringify(question?.content)).match(/\d+/g) ?? [];
    return (
      chunk(model, { role: 'assistant', content: `${a} + ${b} ` }) +
      chunk(model, { content: `= ${sum}.` }) +
      chunk(model, {}, 'stop') +
      end(model)
    );
  }
  const [a = '0', b = '0'] = String(JSON.stringify(last?.content)).match(/\d+/g) ?? [];
  const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'add', arguments: '' } };
  return (
    chunk(model, { role: 'assistant', tool_calls: [call] }) +
    chunk(model, { tool_calls: [{ index: 0, function: { arguments: `{"a":${a},"b":${b}}` } }] }) +
    chunk(model, {}, 'tool_calls') +
    end(model)
  );
}

/** Starts the server on a free port of 127.0.0.1. */
export async function startQuickStartServer(): Promise<QuickStartServer> {
  const requests: ChatRequest[] = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8').on('data', (piece: string) => {
      text += piece;
    });
    request.on('end', () => {
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ error: { message: `No route ${request.url}`, type: 'invalid_request_error' } }),
        );
        return;
      }
      const body = JSON.parse(text) as ChatRequest;
      requests.push(body);
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      response.end(answer(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
