/**
 * The conformance kit's fleet spec against a BullMQDispatcher that never notices a dead worker (its stalled-job
 * check never comes round): run by `conformance-catches-dead-worker.test.ts`, which expects the SIGKILL test to
 * fail.
 */
import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import { BullMQDispatcher } from '../bullmq-dispatcher.js';
import { openDispatcher, testSettings } from './open-dispatcher.js';
import { redisUrl, uniquePrefix } from './redis-test-server.js';

const broken = { stalledIntervalMs: 3_600_000 };
const prefixes = new WeakMap<object, string>();

runDispatcherConformance({
  name: 'broken: never notices a dead worker',
  tsconfig: false,
  async create(policy) {
    const keyPrefix = uniquePrefix();
    const dispatcher = new BullMQDispatcher({
      ...policy,
      ...testSettings,
      ...broken,
      url: redisUrl,
      keyPrefix,
    });
    prefixes.set(dispatcher, keyPrefix);
    return dispatcher;
  },
  createSibling: (dispatcher, policy) =>
    openDispatcher({ keyPrefix: prefixes.get(dispatcher)!, settings: broken }, policy),
  redeliveryMs: 3_000,
  workerProcess: {
    module: new URL('./open-dispatcher.ts', import.meta.url),
    backend: (dispatcher) => ({ keyPrefix: prefixes.get(dispatcher)!, settings: broken }),
  },
});
