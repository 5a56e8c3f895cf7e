import type { Redis } from 'ioredis';
import type { LuaScript } from './dispatch-scripts.js';

/** Runs Lua scripts with EVALSHA, loading one with EVAL when the server does not know it yet. */
export async function runScript(
  client: Redis,
  script: LuaScript,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return await client.eval(script.source, keys.length, ...keys, ...args);
  }
}
