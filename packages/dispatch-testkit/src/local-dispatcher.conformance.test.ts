import { LocalDispatcher } from '@lunation/fleet';
import { runDispatcherConformance } from './run-dispatcher-conformance.js';

runDispatcherConformance({
  name: 'local',
  create: async (policy) => new LocalDispatcher(policy),
  createSibling: async (dispatcher, policy) =>
    new LocalDispatcher({ ...policy, backend: (dispatcher as LocalDispatcher).backend }),
  redeliveryMs: 1_000,
  // Its backend lives in this process's memory: no worker process can reach it.
  workerProcess: false,
});
