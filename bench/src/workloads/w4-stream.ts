import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * W4's recorded answer: one Chat Completions stream as OpenAI sends it (a role chunk, one content chunk per token,
 * `finish_reason`, the usage chunk of `stream_options.include_usage`, `[DONE]`), served the same to every
 * framework.
 */
export const W4_MODEL = 'gpt-4.1-mini';

const tokens = [
  'The',
  ' capital',
  ' of',
  ' France',
  ' is',
  ' Paris',
  ',',
  ' on',
  ' the',
  ' Seine',
  '.',
  ' It',
  ' has',
  ' been',
  ' the',
  ' seat',
  ' of',
  ' government',
  ' since',
  ' 987',
  ',',
  ' apart',
  ' from',
  ' brief',
  ' interruptions',
  '.',
];

export const W4_ANSWER = tokens.join('');

const base = {
  id: 'chatcmpl-CbW4xYz9AbCdEfGhIjKlMnOpQrStU',
  object: 'chat.completion.chunk',
  created: 1_764_000_000,
  model: 'gpt-4.1-mini-2025-04-14',
  service_tier: 'default',
  system_fingerprint: 'fp_6f2eabb9a5',
};

function event(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

/** The SSE body, byte for byte. */
export function w4Body(): string {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null, obfuscation: string) =>
    event({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      usage: null,
      obfuscation,
    });
  let body = chunk({ role: 'assistant', content: '', refusal: null }, null, 'Zk2p');
  tokens.forEach((token, index) => {
    body += chunk({ content: token }, null, 'x7Rk2Qa'.slice(0, 1 + (index % 7)));
  });
  body += chunk({}, 'stop', 'pQ3');
  body += event({
    ...base,
    choices: [],
    usage: {
      prompt_tokens: 24,
      completion_tokens: tokens.length,
      total_tokens: 24 + tokens.length,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    obfuscation: 'kW',
  });
  body += 'data: [DONE]\n\n';
  return body;
}

/**
 * A loopback server answering every `POST …/chat/completions` with the recorded stream (headers as OpenAI sends
 * them, the body in one write), and anything else with 404.
 */
export async function startW4Server(): Promise<{
  url: string;
  requests: () => number;
  close(): Promise<void>;
}> {
  const body = Buffer.from(w4Body());
  let requests = 0;
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end('{"error":{"message":"not found","type":"invalid_request_error"}}');
        return;
      }
      requests++;
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'openai-version': '2020-10-01',
        'openai-processing-ms': '182',
        'x-request-id': `req_w4${requests}`,
      });
      response.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests: () => requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
