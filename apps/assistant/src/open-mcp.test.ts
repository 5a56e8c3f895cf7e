import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { LunationError } from '@lunation/contract';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAssistantRuntime, replaceMcpTools } from './create-assistant-runtime.js';
import { openMcp } from './open-mcp.js';
import { seedSandbox } from './tools/seed-sandbox.js';

const everything = join(
  dirname(createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);

describe('the assistant with MCP servers (--mcp)', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'assistant-mcp-'));
    await seedSandbox(join(root, 'sandbox'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('gets the tools of a stdio server from its config, and asks before one that is not read-only', async () => {
    const config = join(root, 'mcp.json');
    await writeFile(
      config,
      JSON.stringify({
        servers: [
          {
            name: 'everything',
            transport: 'stdio',
            command: process.execPath,
            args: [everything, 'stdio'],
            tools: { include: ['echo', 'toggle-simulated-logging'] },
          },
        ],
      }),
    );
    const mcp = await openMcp(config);
    try {
      const model = new ScriptedModel([
        callTool('everything__echo', { message: 'hi' }),
        callTool('everything__toggle-simulated-logging', {}),
        reply('never reached'),
      ]);
      const runtime = createAssistantRuntime({
        model,
        store: new MemoryStore(),
        sandbox: join(root, 'sandbox'),
        mcpTools: mcp.tools(),
      });
      const result = await runtime.generate({ threadId: 't', input: 'echo hi, then toggle logging' });
      expect(model.requests[0]?.tools.map((tool) => tool.name)).toEqual([
        'calculator',
        'current_time',
        'read_file',
        'slow_task',
        'ask_user',
        'everything__echo',
        'everything__toggle-simulated-logging',
      ]);
      const echoed = result.messages
        .filter((message) => message.role === 'tool')
        .flatMap((message) => message.content)
        .map((part) => (part.type === 'tool-result' ? part.result.message : undefined));
      expect(echoed).toEqual(['Echo: hi']);
      expect(result.status).toBe('waiting');
      expect(result.openTickets.map((ticket) => [ticket.toolName, ticket.message])).toEqual([
        [
          'everything__toggle-simulated-logging',
          'The assistant wants to use an MCP tool that may change things.',
        ],
      ]);

      replaceMcpTools(runtime, mcp.tools().slice(0, 1));
      const agent = runtime.registry.current.agent('assistant');
      expect([...agent.tools.keys()]).toEqual([
        'calculator',
        'current_time',
        'read_file',
        'slow_task',
        'ask_user',
        'everything__echo',
      ]);
    } finally {
      await mcp.close();
    }
  });

  it('refuses a config file that is not a server list, saying why', async () => {
    const config = join(root, 'bad.json');
    await writeFile(config, '{"server": []}');
    await expect(openMcp(config)).rejects.toSatisfy(
      (error) =>
        LunationError.hasCode(error, 'invalid-argument') &&
        (error as Error).message === `The MCP config ${config} needs a "servers" list`,
    );
    await expect(openMcp(join(root, 'missing.json'))).rejects.toSatisfy((error) =>
      LunationError.hasCode(error, 'invalid-argument'),
    );
  });
});
