import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import { LocalDispatcher } from './local-dispatcher.js';

runDispatcherConformance({
  name: 'local',
  create: async (policy) => new LocalDispatcher(policy),
  createSibling: async (dispatcher, policy) =>
    new LocalDispatcher({ ...policy, backend: (dispatcher as LocalDispatcher).backend }),
  redeliveryMs: 1_000,
});
