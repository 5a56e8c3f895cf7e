import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content?: unknown }>;
  tools?: Array<{ function: { name: string } }>;
}

/** A Responses API request, as far as the quick start needs it. */
interface ResponsesRequest {
  model: string;
  input: Array<{ role?: string; type?: string; content?: unknown; output?: unknown }>;
}

/** A local OpenAI-compatible server. */
export interface QuickStartServer {
  /** The base URL to pass as `OPENAI_BASE_URL`, ending in `/v1`. */
  baseURL: string;
  /** The bodies of the chat completion requests received. */
  requests: ChatRequest[];
  /** The bodies of the Responses API requests received. */
  responsesRequests: ResponsesRequest[];
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

/** The sum in an `add` tool result (`{"sum":3}`); undefined for any other result. */
function sumOf(result: unknown): number | undefined {
  try {
    const sum = (JSON.parse(String(result)) as { sum?: unknown }).sum;
    return typeof sum === 'number' ? sum : undefined;
  } catch {
    return undefined;
  }
}

/** The two numbers of the question "What is A + B?". */
function operands(content: unknown): [string, string] {
  const [a = '0', b = '0'] = String(JSON.stringify(content)).match(/\d+/g) ?? [];
  return [a, b];
}

/**
 * Plays the model of the runtime README's quick start over the OpenAI wire format (Chat Completions, streamed):
 * asked "What is A + B?" with an `add` tool, it calls `add` with `{ a: A, b: B }`, then answers
 * "A + B = <the tool's sum>." from the tool result. A result of another tool gets the answer "Done.".
 */
function answer(request: ChatRequest): string {
  const { model, messages } = request;
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const sum = sumOf(last.content);
    const [a, b] = operands(messages.findLast((message) => message.role === 'user')?.content);
    const text = sum === undefined ? 'Done.' : `${a} + ${b} = ${sum}.`;
    return (
      chunk(model, { role: 'assistant', content: text.slice(0, 6) }) +
      chunk(model, { content: text.slice(6) }) +
      chunk(model, {}, 'stop') +
      end(model)
    );
  }
  const [a, b] = operands(last?.content);
  const call = { index: 0, id: 'call_1', type: 'function', function: { name: 'add', arguments: '' } };
  return (
    chunk(model, { role: 'assistant', tool_calls: [call] }) +
    chunk(model, { tool_calls: [{ index: 0, function: { arguments: `{"a":${a},"b":${b}}` } }] }) +
    chunk(model, {}, 'tool_calls') +
    end(model)
  );
}

/** One Responses API event, framed as OpenAI frames it (`event:` and `data:` lines). */
function responsesEvent(sequence: number, type: string, fields: Record<string, unknown>): string {
  return `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence, ...fields })}\n\n`;
}

/**
 * The same model over the Responses API (streamed): first a reasoning item (its summary and encrypted content)
 * and a `function_call` of `add`; after the `function_call_output`, a message with the answer.
 */
function answerResponses(request: ResponsesRequest): string {
  const { model, input } = request;
  const events: Array<[string, Record<string, unknown>]> = [];
  const output: Record<string, unknown>[] = [];
  const response = (fields: Record<string, unknown>) => ({
    id: 'resp_quick_start',
    object: 'response',
    created_at: 1,
    model,
    status: 'in_progress',
    output: [],
    usage: null,
    ...fields,
  });
  events.push(['response.created', { response: response({}) }]);
  const item = (index: number, added: Record<string, unknown>, done: Record<string, unknown>) => {
    events.push(['response.output_item.added', { output_index: index, item: added }]);
    return () => {
      events.push(['response.output_item.done', { output_index: index, item: done }]);
      output.push(done);
    };
  };
  const last = input.at(-1);
  if (last?.type === 'function_call_output') {
    const sum = sumOf(last.output);
    const [a, b] = operands(input.findLast((entry) => entry.role === 'user')?.content);
    const text = sum === undefined ? 'Done.' : `${a} + ${b} = ${sum}.`;
    const part = { type: 'output_text', annotations: [], text };
    const close = item(
      0,
      { id: 'msg_1', type: 'message', status: 'in_progress', role: 'assistant', content: [] },
      { id: 'msg_1', type: 'message', status: 'completed', role: 'assistant', content: [part] },
    );
    events.push([
      'response.content_part.added',
      { item_id: 'msg_1', output_index: 0, content_index: 0, part: { ...part, text: '' } },
    ]);
    events.push([
      'response.output_text.delta',
      { item_id: 'msg_1', output_index: 0, content_index: 0, delta: text },
    ]);
    events.push(['response.output_text.done', { item_id: 'msg_1', output_index: 0, content_index: 0, text }]);
    events.push([
      'response.content_part.done',
      { item_id: 'msg_1', output_index: 0, content_index: 0, part },
    ]);
    close();
  } else {
    const [a, b] = operands(last?.content);
    const summary = 'The user wants a sum; the add tool computes it.';
    const closeReasoning = item(
      0,
      { id: 'rs_1', type: 'reasoning', summary: [] },
      {
        id: 'rs_1',
        type: 'reasoning',
        summary: [{ type: 'summary_text', text: summary }],
        encrypted_content: 'gAAAAB-quick-start',
      },
    );
    events.push([
      'response.reasoning_summary_part.added',
      { item_id: 'rs_1', output_index: 0, summary_index: 0, part: { type: 'summary_text', text: '' } },
    ]);
    events.push([
      'response.reasoning_summary_text.delta',
      { item_id: 'rs_1', output_index: 0, summary_index: 0, delta: summary },
    ]);
    events.push([
      'response.reasoning_summary_text.done',
      { item_id: 'rs_1', output_index: 0, summary_index: 0, text: summary },
    ]);
    events.push([
      'response.reasoning_summary_part.done',
      { item_id: 'rs_1', output_index: 0, summary_index: 0, part: { type: 'summary_text', text: summary } },
    ]);
    closeReasoning();
    const args = `{"a":${a},"b":${b}}`;
    const call = { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'add' };
    const closeCall = item(
      1,
      { ...call, status: 'in_progress', arguments: '' },
      { ...call, status: 'completed', arguments: args },
    );
    events.push([
      'response.function_call_arguments.delta',
      { item_id: 'fc_1', output_index: 1, delta: args },
    ]);
    events.push([
      'response.function_call_arguments.done',
      { item_id: 'fc_1', output_index: 1, arguments: args },
    ]);
    closeCall();
  }
  const usage = {
    input_tokens: 20,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 8,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 28,
  };
  events.push(['response.completed', { response: response({ status: 'completed', output, usage }) }]);
  return events.map(([type, fields], sequence) => responsesEvent(sequence, type, fields)).join('');
}

/** Starts the server on a free port of 127.0.0.1. */
export async function startQuickStartServer(): Promise<QuickStartServer> {
  const requests: ChatRequest[] = [];
  const responsesRequests: ResponsesRequest[] = [];
  const server: Server = createServer((request, response) => {
    let text = '';
    request.setEncoding('utf8').on('data', (piece: string) => {
      text += piece;
    });
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/responses') {
        const body = JSON.parse(text) as ResponsesRequest;
        responsesRequests.push(body);
        response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
        response.end(answerResponses(body));
        return;
      }
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
    responsesRequests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
