import { afterAll, beforeAll, beforeEach } from 'vitest';
import { ScriptedServer } from './scripted-server.js';

/**
 * A `ScriptedServer` for the calling test file: started before its tests, stopped after them, and reset
 * (its queue and recorded requests cleared) before each test.
 */
export function useScriptedServer(): ScriptedServer {
  const server = new ScriptedServer();
  beforeAll(async () => {
    await server.start();
  });
  afterAll(async () => {
    await server.stop();
  });
  beforeEach(() => {
    server.reset();
  });
  return server;
}
