import { runDispatcherConformance } from '@lunation/dispatch-testkit';
import { LocalDispatcher } from './local-dispatcher.js';

runDispatcherConformance({
  name: 'local',
  tsconfig: new URL('../tsconfig.json', import.meta.url),
  create: async (policy) => new LocalDispatcher(policy),
  createSibling: async (dispatcher, policy) =>
    new LocalDispatcher({ ...policy, backend: (dispatcher as LocalDispatcher).backend }),
  redeliveryMs: 1_000,
});
