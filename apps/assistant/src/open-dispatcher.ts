import { createHash } from 'node:crypto';
import { type Dispatcher, LunationError } from '@lunation/contract';
import type { AssistantSettings, DispatchKind } from './command-line.js';
import { redactPassword } from './open-store.js';

/**
 * Opens the fleet's dispatcher and checks that it answers. Its keys are named after the store, so that every
 * server and worker naming one store meets in one queue, and fleets of different stores never mix their work.
 */
export async function openDispatcher(
  kind: DispatchKind,
  settings: AssistantSettings,
  timeoutMs = 5_000,
): Promise<Dispatcher> {
  const where = kind === 'redis' ? settings.redisUrl : (settings.postgresUrl ?? '');
  const opening = open(kind, settings);
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${timeoutMs} ms; check that the server is running`)),
        timeoutMs,
      );
    });
    const answered = opening.then(async (dispatcher) => {
      await dispatcher.depth();
      return dispatcher;
    });
    return await Promise.race([answered, timeout]);
  } catch (error) {
    // Closed whenever it opens, also after the timeout.
    void opening.then((dispatcher) => dispatcher.close()).catch(() => {});
    throw new LunationError(
      'store-unavailable',
      `Cannot use the ${kind} dispatcher at ${redactPassword(where)}: ${(error as Error).message}`,
      { cause: error },
    );
  } finally {
    clearTimeout(timer);
  }
}

async function open(kind: DispatchKind, settings: AssistantSettings): Promise<Dispatcher> {
  const namespace = storeNamespace(settings);
  if (kind === 'postgres') {
    const { PostgresDispatcher } = await import('@lunation/dispatch-postgres');
    return PostgresDispatcher.open({
      connectionString: settings.postgresUrl ?? '',
      schema: `lunation_dispatch_${namespace}`,
    });
  }
  const { BullMQDispatcher } = await import('@lunation/dispatch-bullmq');
  return new BullMQDispatcher({
    url: settings.redisUrl,
    keyPrefix: `lunation:assistant:dispatch:${namespace}:`,
  });
}

/** A short name of the store the settings open: the same for every process that opens that store. */
export function storeNamespace(settings: AssistantSettings): string {
  const where = {
    sqlite: settings.sqlitePath,
    memory: 'memory',
    redis: settings.redisUrl,
    postgres: `${redactPassword(settings.postgresUrl ?? '')} ${settings.postgresSchema}`,
  }[settings.store];
  return createHash('sha256').update(`${settings.store} ${where}`).digest('hex').slice(0, 12);
}
