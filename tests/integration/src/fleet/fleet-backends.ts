import { PostgresDispatcher } from '@lunation/dispatch-postgres';
import type { DispatcherConnection } from '../../fixtures/fleet-connection.js';
import type { StoreConnection } from '../../fixtures/store-connection.js';
import { type SoakBackend, soakBackends } from '../crash-soak/soak-backends.js';

/** A dispatcher with the store its fleet shares: the pair a deployment would run. */
export interface FleetBackend {
  name: string;
  /** Fails with a clear message when a server is missing: the fleet test never skips. */
  ensureReachable(): Promise<void>;
  /** Fresh, empty places for one test's store and dispatcher. */
  connect(label: string, directory: string): { store: StoreConnection; dispatcher: DispatcherConnection };
  /** Removes what the test wrote (the store's data and the dispatcher's keys). */
  cleanup(connections: { store: StoreConnection; dispatcher: DispatcherConnection }): Promise<void>;
}

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const postgresUrl = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const redisStore = soakBackends.find((backend) => backend.name === 'redis') as SoakBackend;
const postgresStore = soakBackends.find((backend) => backend.name === 'postgres') as SoakBackend;

export const fleetBackends: FleetBackend[] = [
  {
    name: 'bullmq + redis store',
    ensureReachable: () => redisStore.ensureReachable(),
    connect: (label, directory) => ({
      store: redisStore.connect(`fleet-${label}`, directory),
      dispatcher: { dispatcher: 'bullmq', url: redisUrl, keyPrefix: `lunation-fleet:${label}:` },
    }),
    cleanup: async ({ store, dispatcher }) => {
      await redisStore.cleanup(store);
      if (dispatcher.dispatcher === 'bullmq') {
        await redisStore.cleanup({ store: 'redis', url: redisUrl, keyPrefix: dispatcher.keyPrefix });
      }
    },
  },
  {
    name: 'pg-boss + postgres store',
    ensureReachable: () => postgresStore.ensureReachable(),
    connect: (label, directory) => {
      const schema = `lunation_fleet_${label.replace(/[^a-zA-Z0-9_]/g, '_')}`.slice(0, 40);
      return {
        store: postgresStore.connect(`fleet-${label}`, directory),
        dispatcher: { dispatcher: 'postgres', url: postgresUrl, schema: `${schema}_d` },
      };
    },
    cleanup: async ({ store, dispatcher }) => {
      await postgresStore.cleanup(store);
      if (dispatcher.dispatcher === 'postgres') {
        const opened = await PostgresDispatcher.open({
          connectionString: dispatcher.url,
          schema: dispatcher.schema,
        });
        await opened.dropSchema();
        await opened.close();
      }
    },
  },
];
