import { execFileSync } from 'node:child_process';
import { LunationError, type PortableTool, type PortableToolContext } from '@lunation/contract';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MCP_IDEMPOTENCY_KEY_META, McpToolset } from '../src/index.js';
import { everythingServer } from './fixtures/everything-server.js';
import { type NotesServer, startNotesServer } from './fixtures/notes-server.js';

let notes: NotesServer;
beforeAll(async () => {
  notes = await startNotesServer();
});
afterAll(async () => {
  await notes.close();
});
const toolsets: McpToolset[] = [];
afterEach(async () => {
  for (const toolset of toolsets.splice(0)) await toolset.close();
});

async function open(options: ConstructorParameters<typeof McpToolset>[0]) {
  const toolset = await McpToolset.connect(options);
  toolsets.push(toolset);
  return toolset;
}

/** A tool context as the runtime gives one (only what a portable tool reads). */
function context(toolName: string, overrides: Partial<PortableToolContext> = {}): PortableToolContext {
  return {
    toolCallId: 'call-1',
    toolName,
    identity: { threadId: 't', runId: 'r' } as never,
    signal: new AbortController().signal,
    idempotencyKey: `key-${toolName}`,
    rerun: false,
    decision: undefined,
    reportProgress: () => undefined,
    suspend: (ticket) => ({ suspended: ticket }),
    output: (result) => ({ output: result }),
    ...overrides,
  };
}

function find(tools: PortableTool[], name: string): PortableTool {
  const tool = tools.find((candidate) => candidate.descriptor.name === name);
  if (!tool)
    throw new Error(`no tool ${name} in ${tools.map((candidate) => candidate.descriptor.name).join(', ')}`);
  return tool;
}

describe('McpToolset', () => {
  it.each([
    ['2026-07-28', 'auto' as const, 'modern'],
    ['2025', 'legacy' as const, 'legacy'],
  ])(
    'lists and calls a Streamable HTTP server speaking %s, sending the idempotency key in _meta',
    async (_, protocol, era) => {
      const toolset = await open({
        servers: [{ name: 'notes', transport: 'http', url: notes.url, protocol }],
      });
      const version = toolset.protocolVersions().notes;
      if (era === 'modern') expect(version).toBe('2026-07-28');
      else expect(version).toMatch(/^2025-/);
      const tools = toolset.tools();
      expect(tools.map((tool) => tool.descriptor.name).sort()).toEqual([
        'notes__add_note',
        'notes__clear_with_confirmation',
        'notes__delete_notes',
        'notes__fail',
        'notes__list_notes',
        'notes__slow',
        'notes__wait_for_release',
      ]);
      const add = find(tools, 'notes__add_note');
      expect(add.descriptor.parameters).toMatchObject({
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
      });
      expect(add.annotations).toEqual({
        readOnlyHint: false,
        destructiveHint: false,
        idempotentHint: false,
        openWorldHint: true,
      });
      expect(find(tools, 'notes__list_notes').annotations).toMatchObject({
        readOnlyHint: true,
        destructiveHint: false,
      });
      expect(find(tools, 'notes__fail').annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
      });

      const from = notes.calls.length;
      const output = await add.execute({ text: `milk ${era}` }, context('notes__add_note'));
      expect(output).toEqual({
        output: {
          status: 'success',
          message: expect.stringMatching(new RegExp(`^Added note \\d+: milk ${era}$`)),
          metadata: { mcp: { server: 'notes', tool: 'add_note', protocolVersion: version } },
        },
      });
      const seen = notes.calls.slice(from);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ tool: 'add_note', arguments: { text: `milk ${era}` }, era });
      expect(seen[0]?.meta[MCP_IDEMPOTENCY_KEY_META]).toBe('key-notes__add_note');
      expect(seen[0]?.meta['dev.lunation/tool-call-id']).toBe('call-1');

      const listed = (await find(tools, 'notes__list_notes').execute({}, context('notes__list_notes'))) as {
        output: { data: { notes: string[] } };
      };
      expect(listed.output.data.notes).toContain(`milk ${era}`);
    },
  );

  it('turns an error result, a timeout and an unreachable server into error results the model sees', async () => {
    const toolset = await open({
      servers: [{ name: 'notes', transport: 'http', url: notes.url, timeoutMs: 300, reconnectAttempts: 1 }],
    });
    const tools = toolset.tools();
    expect(await find(tools, 'notes__fail').execute({}, context('notes__fail'))).toEqual({
      output: {
        status: 'error',
        message: 'The notebook is locked.',
        metadata: { mcp: { server: 'notes', tool: 'fail', protocolVersion: '2026-07-28' } },
      },
    });
    expect(await find(tools, 'notes__slow').execute({ ms: 3_000 }, context('notes__slow'))).toEqual({
      output: {
        status: 'error',
        message: 'The MCP server "notes" did not answer "slow" within 300 ms.',
        metadata: { mcp: { server: 'notes', tool: 'slow', protocolVersion: '2026-07-28', timedOut: true } },
      },
    });
    const invalid = (await find(tools, 'notes__slow').execute({ ms: 'soon' }, context('notes__slow'))) as {
      output: { status: string; message: string };
    };
    expect(invalid.output.status).toBe('error');
    expect(invalid.output.message).toMatch(/ms/);

    const doomed = await startNotesServer();
    const gone = await open({
      servers: [{ name: 'doomed', transport: 'http', url: doomed.url, reconnectAttempts: 1 }],
    });
    await doomed.close();
    const unreachable = (await find(gone.tools(), 'doomed__list_notes').execute(
      {},
      context('doomed__list_notes'),
    )) as { output: { status: string; message: string } };
    expect(unreachable.output.status).toBe('error');
    expect(unreachable.output.message).toMatch(/^The MCP server "doomed" failed the call of "list_notes": /);
  });

  it.each([
    ['2026-07-28', 'auto' as const],
    ['2025', 'legacy' as const],
  ])(
    'sends a call again, with the same key marked as a re-run, when its HTTP connection is cut mid-call (%s)',
    async (_, protocol) => {
      const cut = await startNotesServer();
      try {
        const toolset = await open({
          servers: [{ name: 'notes', transport: 'http', url: cut.url, protocol }],
        });
        const pending = find(toolset.tools(), 'notes__wait_for_release').execute(
          {},
          context('notes__wait_for_release'),
        );
        await cut.nextCall('wait_for_release');
        cut.dropConnections();
        await cut.nextCall('wait_for_release', 1);
        cut.release();
        expect(await pending).toMatchObject({ output: { status: 'success', message: 'released' } });
        expect(
          cut.calls.map((call) => [call.meta[MCP_IDEMPOTENCY_KEY_META], call.meta['dev.lunation/rerun']]),
        ).toEqual([
          ['key-notes__wait_for_release', undefined],
          ['key-notes__wait_for_release', true],
        ]);
      } finally {
        await cut.close();
      }
    },
  );

  it.each([
    [100, 'auto' as const],
    [100, 'legacy' as const],
    [2_000, 'auto' as const],
  ])(
    'rides out a server restart mid-call (down %d ms, %s): reconnects with back-off and sends the call again once with its key',
    async (downMs, protocol) => {
      const restarting = await startNotesServer();
      try {
        const toolset = await open({
          servers: [{ name: 'notes', transport: 'http', url: restarting.url, protocol, timeoutMs: 10_000 }],
        });
        const pending = Promise.resolve(
          find(toolset.tools(), 'notes__wait_for_release').execute({}, context('notes__wait_for_release')),
        );
        await restarting.nextCall('wait_for_release');
        const restarted = restarting.restart(downMs);
        const again = await Promise.race([
          restarting.nextCall('wait_for_release', 1),
          pending.then((output) => {
            throw new Error(`The call ended without being sent again: ${JSON.stringify(output)}`);
          }),
        ]);
        await restarted;
        restarting.release();
        expect(again.meta[MCP_IDEMPOTENCY_KEY_META]).toBe('key-notes__wait_for_release');
        expect(await pending).toMatchObject({ output: { status: 'success', message: 'released' } });
        expect(
          restarting.calls.map((call) => [
            call.tool,
            call.meta[MCP_IDEMPOTENCY_KEY_META],
            call.meta['dev.lunation/rerun'],
          ]),
        ).toEqual([
          ['wait_for_release', 'key-notes__wait_for_release', undefined],
          ['wait_for_release', 'key-notes__wait_for_release', true],
        ]);
      } finally {
        await restarting.close();
      }
    },
  );

  it("gives up reconnecting when the call's timeout runs out, and says so in the error result", async () => {
    const restarting = await startNotesServer();
    try {
      const toolset = await open({
        servers: [{ name: 'notes', transport: 'http', url: restarting.url, timeoutMs: 600 }],
      });
      const pending = find(toolset.tools(), 'notes__wait_for_release').execute(
        {},
        context('notes__wait_for_release'),
      );
      await restarting.nextCall('wait_for_release');
      const restarted = restarting.restart(3_000);
      const output = (await pending) as { output: { status: string; message: string; metadata: unknown } };
      expect(output.output.status).toBe('error');
      expect(output.output.message).toMatch(
        /^The MCP server "notes" failed the call of "wait_for_release": the connection was cut and the server could not be reached again \(\d+ tries in \d+ ms\): /,
      );
      expect(output.output.metadata).toMatchObject({ mcp: { disconnected: true } });
      expect(restarting.calls).toHaveLength(1);
      await restarted;
    } finally {
      await restarting.close();
    }
  });

  it('namespaces several servers, filters their tools, and refuses a bad config with every problem named', async () => {
    const toolset = await open({
      servers: [
        {
          name: 'notes',
          transport: 'http',
          url: notes.url,
          tools: { include: ['list_*', 'add_*'], exclude: ['add_*'] },
        },
        everythingServer({ tools: (tool) => ['echo', 'get-sum'].includes(tool.name) }),
      ],
    });
    expect(toolset.tools().map((tool) => tool.descriptor.name)).toEqual([
      'notes__list_notes',
      'everything__echo',
      'everything__get-sum',
    ]);
    expect(toolset.toolInfos().map((info) => [info.server, info.name, info.lunationName])).toEqual([
      ['notes', 'list_notes', 'notes__list_notes'],
      ['everything', 'echo', 'everything__echo'],
      ['everything', 'get-sum', 'everything__get-sum'],
    ]);
    const sum = await find(toolset.tools(), 'everything__get-sum').execute(
      { a: 2, b: 40 },
      context('everything__get-sum'),
    );
    expect(sum).toMatchObject({ output: { status: 'success', message: expect.stringContaining('42') } });

    let thrown: unknown;
    try {
      new McpToolset({
        servers: [
          { name: 'bad name', transport: 'stdio', command: '' },
          { name: 'x', transport: 'http', url: 'not a url' },
          { name: 'x', transport: 'http', url: 'http://localhost', timeoutMs: -1 },
        ],
      });
    } catch (error) {
      thrown = error;
    }
    expect(LunationError.hasCode(thrown, 'invalid-argument')).toBe(true);
    expect((thrown as Error).message).toBe(
      'Invalid MCP server config: servers[0].name must be 1-32 letters, digits, "_" or "-" (got "bad name"); ' +
        'servers[0].command must be a non-empty string; servers[1].url must be an absolute URL (got "not a url"); ' +
        'servers[2].name "x" is used twice; servers[2].timeoutMs must be a number >= 0',
    );
  });

  it('fails to connect with mcp-unavailable naming the server and the end of its stderr', async () => {
    let thrown: unknown;
    try {
      await McpToolset.connect({
        servers: [
          {
            name: 'broken',
            transport: 'stdio',
            command: process.execPath,
            args: ['-e', 'console.error("no such database"); process.exit(3)'],
            protocol: 'legacy',
            connectTimeoutMs: 5_000,
          },
        ],
      });
    } catch (error) {
      thrown = error;
    }
    expect(LunationError.hasCode(thrown, 'mcp-unavailable')).toBe(true);
    expect((thrown as Error).message).toMatch(
      /^MCP server "broken" could not be reached: .*no such database/,
    );
  });

  it('picks up a tool-list change and tells its listeners', async () => {
    const toolset = await open({ servers: [{ name: 'notes', transport: 'http', url: notes.url }] });
    const changes: string[][] = [];
    const seen = new Promise<void>((resolve) =>
      toolset.onToolsChanged((tools) => {
        changes.push(tools.map((tool) => tool.descriptor.name).filter((name) => name.includes('archive')));
        resolve();
      }),
    );
    notes.addTool('archive');
    await seen;
    expect(changes.at(-1)).toEqual(['notes__archive']);
    expect(
      await find(toolset.tools(), 'notes__archive').execute({}, context('notes__archive')),
    ).toMatchObject({
      output: { status: 'success', message: 'archive ran' },
    });
  });

  it('reconnects to a stdio server that died, and lists its tools again', async () => {
    const toolset = await open({ servers: [everythingServer({ tools: { include: ['echo'] } })] });
    const echo = () => find(toolset.tools(), 'everything__echo');
    expect(await echo().execute({ message: 'one' }, context('everything__echo'))).toMatchObject({
      output: { status: 'success', message: 'Echo: one' },
    });
    const servers = () =>
      execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes('server-everything'))
        .map((line) => Number.parseInt(line.trim(), 10));
    const [pid, ...others] = servers();
    expect(others).toEqual([]);
    process.kill(pid ?? 0, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await echo().execute({ message: 'two' }, context('everything__echo'))).toMatchObject({
      output: { status: 'success', message: 'Echo: two' },
    });
    const [restarted] = servers();
    expect(restarted).toEqual(expect.any(Number));
    expect(restarted).not.toBe(pid);
  });
});
