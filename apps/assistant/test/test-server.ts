import type { ModelProvider } from '@lunation/contract';
import { MemoryStore } from '@lunation/store-memory';
import { AssistantServer, type AssistantServerOptions } from '../src/assistant-server.js';
import { createAssistantRuntime } from '../src/create-assistant-runtime.js';

export const ALICE = 'token-alice';
export const BOB = 'token-bob';

/** The assistant's server on a free port with a MemoryStore and two tokens (alice, bob). */
export interface TestServer {
  url: string;
  server: AssistantServer;
  call(path: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export async function startServer(
  model: ModelProvider,
  sandbox: string,
  options: Pick<AssistantServerOptions, 'logError' | 'maxJsonDepth' | 'routes'> = {},
): Promise<TestServer> {
  const store = new MemoryStore();
  const runtime = createAssistantRuntime({ model, store, sandbox, slowTask: { stepMs: 1_000 } });
  const server = new AssistantServer({
    runtime,
    store,
    tokens: new Map([
      [ALICE, 'alice'],
      [BOB, 'bob'],
    ]),
    logError: () => {},
    ...options,
  });
  const url = await server.listen(0, '127.0.0.1');
  return {
    url,
    server,
    call: (path, { token = ALICE, json, headers, ...init } = {}) =>
      fetch(`${url}${path}`, {
        ...init,
        ...(json === undefined ? {} : { method: init.method ?? 'POST', body: JSON.stringify(json) }),
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(json === undefined ? {} : { 'content-type': 'application/json' }),
          ...(headers as Record<string, string> | undefined),
        },
      }),
    close: async () => {
      await server.close();
      await store.close();
    },
  };
}

/** The status and JSON error body of a response. */
export async function errorOf(
  response: Response,
): Promise<{ status: number; code: string; message: string }> {
  const body = (await response.json()) as { error: { code: string; message: string } };
  return { status: response.status, ...body.error };
}
