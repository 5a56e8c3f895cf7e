import type { Server } from 'node:http';
import { hostname } from 'node:os';
import { relative } from 'node:path';
import { type Dispatcher, LunationError, type ModelProvider } from '@lunation/contract';
import type { McpToolset } from '@lunation/mcp';
import { combineInstrumentation } from '@lunation/otel';
import { type AssistantSettings, HELP, parseCommandLine } from './command-line.js';
import { createAssistantRuntime, replaceMcpTools } from './create-assistant-runtime.js';
import { createModel } from './create-model.js';
import { openDispatcher } from './open-dispatcher.js';
import { openMcp } from './open-mcp.js';
import { type AssistantMetrics, openMetrics, serveProbes } from './open-metrics.js';
import { openStore, redactPassword } from './open-store.js';
import { openTracing } from './open-tracing.js';
import { runChat } from './run-chat.js';
import { runServer } from './run-server.js';
import { runWorker } from './run-worker.js';
import { withStartupWait } from './startup-wait.js';
import { seedSandbox } from './tools/seed-sandbox.js';
import { createWorkerLogger } from './worker-logger.js';

async function main(args: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const command = parseCommandLine(args, env);
  if (command.type === 'help') {
    process.stdout.write(HELP);
    return;
  }
  const { settings } = command;
  const model = await createModel({ provider: settings.provider, model: settings.model, env });
  await seedSandbox(settings.sandbox);
  const log = (line: string) => console.log(line);
  const wait = { waitMs: settings.startupWaitMs, log };
  const storeName = { sqlite: 'SQLite', memory: 'memory', redis: 'Redis', postgres: 'PostgreSQL' }[
    settings.store
  ];
  const openTheStore = (connectTimeoutMs: number) =>
    openStore({
      kind: settings.store,
      sqlitePath: settings.sqlitePath,
      redisUrl: settings.redisUrl,
      postgresUrl: settings.postgresUrl,
      postgresSchema: settings.postgresSchema,
      connectTimeoutMs,
    });
  // A server (Redis, PostgreSQL) may answer late: it is starting, or this process is starved on a busy machine.
  const store =
    settings.store === 'redis' || settings.store === 'postgres'
      ? await withStartupWait(storeName, openTheStore, wait)
      : await openTheStore(5_000);
  let mcp: McpToolset | undefined;
  let dispatcher: Dispatcher | undefined;
  let metrics: AssistantMetrics | undefined;
  let probes: Server | undefined;
  const tracing = settings.trace ? openTracing(settings.trace, env) : undefined;
  try {
    const dispatchKind = settings.dispatch;
    if (dispatchKind) {
      dispatcher = await withStartupWait(
        `the ${dispatchKind} dispatcher`,
        (timeoutMs) => openDispatcher(dispatchKind, settings, timeoutMs),
        wait,
      );
    }
    if (command.type === 'serve' || (command.type === 'worker' && command.metricsPort !== undefined)) {
      metrics = openMetrics({ serviceName: `lunation-assistant-${command.type}`, dispatcher });
    }
    const workerId = `${hostname()}:${process.pid}`;
    const workerLogger = command.type === 'worker' ? createWorkerLogger({ workerId }) : undefined;
    const instrumentations = [
      tracing?.instrumentation,
      metrics?.metrics,
      workerLogger?.instrumentation,
    ].filter((each) => each !== undefined);
    // One owner per data folder and command: a restart takes its threads over within 4.5 s of a crash, while two
    // live servers on one data folder still never run one thread at once (see README).
    const owner = `assistant-${command.type}@${hostname()}:${settings.dataDir}`;
    mcp = settings.mcpConfig ? await openMcp(settings.mcpConfig) : undefined;
    const runtime = createAssistantRuntime({
      model,
      store,
      sandbox: settings.sandbox,
      owner,
      ...(mcp ? { mcpTools: mcp.tools() } : {}),
      ...(instrumentations.length > 0
        ? { instrumentation: combineInstrumentation(...instrumentations) }
        : {}),
    });
    mcp?.onToolsChanged((tools) => replaceMcpTools(runtime, tools));
    const banner = describeSetup(model, settings, env.INIT_CWD ?? process.cwd(), mcp);
    if (command.type === 'serve') {
      const { host, port, tokens } = command;
      const scrape = metrics?.scrape;
      await runServer({
        runtime,
        store,
        dispatcher,
        host,
        port,
        tokens,
        banner,
        log,
        ...(scrape ? { metrics: scrape } : {}),
      });
    } else if (command.type === 'worker') {
      if (metrics && command.metricsPort !== undefined) {
        const { url, server } = await serveProbes({
          port: command.metricsPort,
          host: '127.0.0.1',
          scrape: metrics.scrape,
          store,
          dispatcher: dispatcher!,
        }).catch((error: unknown) => {
          throw new LunationError(
            'invalid-argument',
            `Cannot serve metrics on 127.0.0.1:${command.metricsPort}: ${(error as Error).message}`,
            { cause: error },
          );
        });
        probes = server;
        log(`Metrics: ${url}/metrics · Health: ${url}/healthz, ${url}/readyz`);
      }
      await runWorker({
        runtime,
        dispatcher: dispatcher!,
        workerId,
        concurrency: command.concurrency,
        banner,
        log,
        logger: workerLogger ?? createWorkerLogger({ workerId }),
        ...(metrics ? { workerLog: metrics.metrics.workerLog } : {}),
      });
    } else {
      await runChat({
        runtime,
        store,
        threadId: command.threadId,
        create: command.create,
        continueFlags: command.continueFlags,
        input: process.stdin,
        output: process.stdout,
        banner,
        color: process.stdout.isTTY === true && !env.NO_COLOR,
      });
    }
  } finally {
    probes?.close();
    await dispatcher?.close();
    await mcp?.close();
    await store.close();
    await tracing?.shutdown();
    await metrics?.shutdown();
  }
}

function describeSetup(
  model: ModelProvider,
  settings: AssistantSettings,
  cwd: string,
  mcp: McpToolset | undefined,
): string {
  const show = (path: string) => (relative(cwd, path).startsWith('..') ? path : relative(cwd, path) || '.');
  const modelText = model.provider === 'demo' ? 'offline demo model' : `${model.provider} ${model.modelId}`;
  const storeText = {
    sqlite: `SQLite ${show(settings.sqlitePath)}`,
    memory: 'in-memory store (forgotten on exit)',
    redis: `Redis ${settings.redisUrl}`,
    postgres: `PostgreSQL ${redactPassword(settings.postgresUrl ?? '')}`,
  }[settings.store];
  const servers = Object.keys(mcp?.protocolVersions() ?? {});
  const mcpText = mcp ? ` · MCP: ${servers.join(', ')} (${mcp.tools().length} tools)` : '';
  const traceText = settings.trace ? ` · Tracing: ${settings.trace === 'console' ? 'console' : 'OTLP'}` : '';
  return `Model: ${modelText} · Store: ${storeText} · Sandbox: ${show(settings.sandbox)}${mcpText}${traceText}`;
}

main(process.argv.slice(2), process.env).catch((error: unknown) => {
  if (LunationError.isInstance(error)) {
    process.stderr.write(`error: ${error.message}\n`);
    // Non-zero under `pnpm start` too: a script or a CI step must see the failure (pnpm adds one line of its own).
    process.exitCode = 2;
  } else {
    console.error(error);
    process.exitCode = 1;
  }
});
