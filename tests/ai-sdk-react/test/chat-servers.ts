import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getRequestListener } from '@hono/node-server';
import { createHttpApi, type HttpApi, LocalFront, tokenAuth } from '@lunation/http';
import { type AgentRuntime, createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { ScriptedModel, type ScriptedModelOptions } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { build } from 'esbuild';
import { type Browser, chromium } from 'playwright-core';
import { z } from 'zod';

/** Debian's Chromium (`apt-get install chromium`); the tests never download a browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const TOKEN = 'token-alice';

/** Launches headless Chromium; fails (never skips) when it is missing. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install Debian's package (apt-get install chromium) or set CHROMIUM_PATH`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 20_000,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/** The text the model answers after reading `path`: streamed in small pieces. */
export function answerFor(path: string): string {
  return `The file ${path} says hello, in several small pieces of streamed text.`;
}

/**
 * The model of every run: a user message makes it call `read_file` on the path the message names (which asks
 * for approval); the tool's result makes it answer {@link answerFor} the path. Streamed slowly enough that a
 * reload lands mid-way.
 */
export function readingModel(options: ScriptedModelOptions = {}): ScriptedModel {
  return new ScriptedModel(
    (request) => {
      const last = request.messages.at(-1);
      if (last?.role === 'user') {
        const text = last.content.map((part) => (part.type === 'text' ? part.text : '')).join('');
        return { toolCalls: [{ toolName: 'read_file', arguments: { path: text.replace(/^read /, '') } }] };
      }
      const result = last?.role === 'tool' ? last.content[0] : undefined;
      const path =
        result?.result.status === 'success' ? String(result.result.data).replace(/^contents of /, '') : '?';
      return { text: answerFor(path) };
    },
    { textChunkSize: 4, argumentsChunkSize: 6, partDelayMs: 15, ...options },
  );
}

/** The API on a SQLite file behind a real HTTP server, allowing cross-origin requests from `pageOrigin`. */
export interface ChatApi {
  url: string;
  store: SqliteStore;
  runtime: AgentRuntime;
  /** Paths `read_file` read, in order: a tool that ran twice shows twice. */
  reads: string[];
  close(): Promise<void>;
}

export async function startChatApi(pageOrigin: string, model: ScriptedModel): Promise<ChatApi> {
  const dir = await mkdtemp(join(tmpdir(), 'lunation-use-chat-'));
  const store = new SqliteStore({ path: join(dir, 'threads.db') });
  const reads: string[] = [];
  const readFile = defineTool({
    name: 'read_file',
    description: 'Reads a file',
    input: z.object({ path: z.string() }),
    execute: ({ path }) => {
      reads.push(path);
      return `contents of ${path}`;
    },
  });
  const runtime = createRuntime()
    .model('m', model)
    .agent({
      id: 'assistant',
      model: 'm',
      tools: [readFile],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .store(store)
    .build();
  const api: HttpApi = createHttpApi({
    store,
    front: new LocalFront(runtime),
    authenticate: tokenAuth(new Map([[TOKEN, 'alice']])),
    cors: { origins: [pageOrigin] },
    logError: (error) => {
      throw error;
    },
  });
  const server = await listen(createServer(getRequestListener((request) => api.handle(request))));
  return {
    url: originOf(server),
    store,
    runtime,
    reads,
    close: async () => {
      await api.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The app's page (React and `useChat`, bundled with esbuild) served on its own origin. */
export interface PageServer {
  origin: string;
  close(): Promise<void>;
}

export async function startPageServer(): Promise<PageServer> {
  const bundle = await build({
    entryPoints: [fileURLToPath(new URL('../src/chat-page.tsx', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    logLevel: 'silent',
  });
  const script = bundle.outputFiles[0]!.contents;
  const html =
    '<!doctype html><html lang="en"><title>chat</title><div id="root"></div><script type="module" src="/app.js"></script>';
  const server = await listen(
    createServer((request, response) => {
      if (request.url === '/app.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      } else {
        response.writeHead(200, { 'content-type': 'text/html' }).end(html);
      }
    }),
  );
  return {
    origin: originOf(server),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function listen(server: Server): Promise<Server> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

function originOf(server: Server): string {
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
