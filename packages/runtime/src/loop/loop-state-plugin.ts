import { definePlugin } from '../plugin.js';
import { toolCallsKey } from './call-records.js';

/**
 * Registers the loop's own state keys (the open step's call records); part of every agent, beside the runtime's
 * core plugin, so that `runtime-keys.ts` needs nothing from the loop.
 */
export const loopStatePlugin = definePlugin({
  name: 'runtime.loop',
  register(registrar) {
    registrar.stateKey(toolCallsKey);
  },
});
