import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getRequestListener } from '@hono/node-server';
import type { LunationStore } from '@lunation/contract';
import { type AgentRuntime, createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import type { ScriptedModel } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { z } from 'zod';
import {
  createHttpApi,
  type HttpApi,
  type HttpApiOptions,
  LocalFront,
  type LocalFrontOptions,
  tokenAuth,
} from '../src/index.js';

export const ALICE = 'token-alice';
export const BOB = 'token-bob';

/** Files the `read_file` tool read, in order. */
export const reads: string[] = [];

export const readFile = defineTool({
  name: 'read_file',
  description: 'Reads a file',
  input: z.object({ path: z.string() }),
  execute: ({ path }) => {
    reads.push(path);
    return `contents of ${path}`;
  },
});

export const calculator = defineTool({
  name: 'calculator',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => a + b,
});

/** Waits `ms` (or until the run is cancelled): a call a Stop button cuts off. */
export const wait = defineTool({
  name: 'wait',
  description: 'Waits',
  input: z.object({ ms: z.number() }),
  execute: ({ ms }, { signal }) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => resolve('waited'), ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason);
      });
    }),
});

/** A runtime whose `read_file` asks for approval, on `store`. */
export function testRuntime(
  store: LunationStore,
  model: ScriptedModel,
  owner = 'test-process',
): AgentRuntime {
  return createRuntime()
    .model('m', model)
    .agent({
      id: 'assistant',
      model: 'm',
      tools: [readFile, calculator, wait],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .store(store)
    .options({ owner })
    .build();
}

/** The API on a SQLite file, served over real HTTP with two tokens (alice, bob). */
export interface TestApi {
  url: string;
  api: HttpApi;
  store: SqliteStore;
  runtime: AgentRuntime;
  front: LocalFront;
  call(path: string, init?: RequestInit & { token?: string; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export async function startApi(
  model: ScriptedModel,
  options: { api?: Partial<HttpApiOptions>; front?: LocalFrontOptions } = {},
): Promise<TestApi> {
  const dir = await mkdtemp(join(tmpdir(), 'lunation-http-'));
  const store = new SqliteStore({ path: join(dir, 'threads.db') });
  const runtime = testRuntime(store, model);
  const front = new LocalFront(runtime, options.front);
  const api = createHttpApi({
    store,
    front,
    authenticate: tokenAuth(
      new Map([
        [ALICE, 'alice'],
        [BOB, 'bob'],
      ]),
    ),
    logError: (error) => {
      throw error;
    },
    ...options.api,
  });
  const server: Server = createServer(getRequestListener((request) => api.handle(request)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    api,
    store,
    runtime,
    front,
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
      await api.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** One parsed Server-Sent Event. */
export interface SseEvent {
  id: string | undefined;
  event: string | undefined;
  data: string;
}

/** Reads a whole event stream. */
export async function readSse(response: Response): Promise<SseEvent[]> {
  const text = await response.text();
  return parseSse(text);
}

export function parseSse(text: string): SseEvent[] {
  const events: SseEvent[] = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((line) => line !== '' && !line.startsWith(':'));
    if (lines.length === 0) continue;
    const field = (name: string) =>
      lines.find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
    events.push({ id: field('id'), event: field('event'), data: field('data') ?? '' });
  }
  return events;
}

/** The `run-end` event's data. */
export function runEndOf(events: SseEvent[]): {
  status: string;
  identity: { runId: string };
  openTickets: Array<{ id: string; toolCallId: string }>;
} {
  const end = events.find((event) => event.event === 'run-end');
  if (!end) throw new Error(`no run-end in ${events.map((event) => event.event).join(', ')}`);
  return JSON.parse(end.data);
}
