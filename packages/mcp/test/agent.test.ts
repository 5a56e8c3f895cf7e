import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ModelRequest, ToolResultPart } from '@lunation/contract';
import { type AgentRuntime, createRuntime, permissionPlugin, type RunResult } from '@lunation/runtime';
import { reply, ScriptedModel, type ScriptedResponse } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  MCP_IDEMPOTENCY_KEY_META,
  MCP_INPUT_ACTION,
  McpToolset,
  type McpToolsetOptions,
} from '../src/index.js';
import { everythingServer } from './fixtures/everything-server.js';
import { type NotesServer, startNotesServer } from './fixtures/notes-server.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-mcp-'));
let notes: NotesServer;
beforeAll(async () => {
  notes = await startNotesServer();
});
afterAll(async () => {
  await notes.close();
  rmSync(directory, { recursive: true, force: true });
});
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/** A model that answers from the conversation alone, so any runtime continues the same script. */
function scripted(steps: ScriptedResponse[]) {
  return new ScriptedModel((request: ModelRequest) => {
    const answered = request.messages.filter((message) => message.role === 'tool').length;
    return steps[answered] ?? reply('done');
  });
}

let counter = 0;
/** A "process": its own MCP connections, store handle and runtime over the SQLite file at `path`. */
async function processOn(
  path: string,
  steps: ScriptedResponse[],
  options: Partial<McpToolsetOptions> & { rules?: unknown[] } = {},
): Promise<{ runtime: AgentRuntime; model: ScriptedModel; mcp: McpToolset }> {
  const mcp = await McpToolset.connect({
    servers: options.servers ?? [
      everythingServer({ tools: { include: ['echo', 'get-sum', 'trigger-elicitation-request'] } }),
      { name: 'notes', transport: 'http', url: notes.url },
    ],
    ...(options.elicitation !== undefined ? { elicitation: options.elicitation } : {}),
  });
  closers.push(() => mcp.close());
  const store = await SqliteStore.open({ path });
  closers.push(() => store.close());
  const model = scripted(steps);
  const runtime = createRuntime()
    .model('m', model)
    .agent({
      id: 'assistant',
      model: 'm',
      tools: mcp.tools(),
      plugins: [
        {
          plugin: permissionPlugin,
          config: {
            rules: options.rules ?? [
              { tool: 'notes__*', annotations: { destructiveHint: true }, decision: 'ask' },
            ],
          },
        },
      ],
    })
    .store(store)
    .options({ owner: `process-${++counter}` })
    .build();
  return { runtime, model, mcp };
}

function results(result: RunResult | undefined): ToolResultPart[] {
  return (result?.messages ?? [])
    .filter((message) => message.role === 'tool')
    .flatMap((message) => message.content as ToolResultPart[]);
}

describe('MCP tools in an agent', () => {
  it('uses tools of a stdio and a Streamable HTTP server in one run', async () => {
    const path = join(directory, 'both.sqlite');
    const from = notes.calls.length;
    const { runtime, model } = await processOn(path, [
      {
        toolCalls: [
          { toolName: 'everything__echo', arguments: { message: 'hello' } },
          { toolName: 'notes__add_note', arguments: { text: 'buy milk' } },
        ],
      },
      reply('Echoed and noted.'),
    ]);
    const result = await runtime.generate({ threadId: 'both', input: 'echo and note' });
    expect(result.status).toBe('done');
    expect(result.finalText).toBe('Echoed and noted.');
    expect(results(result).map((part) => [part.toolName, part.result.status, part.result.message])).toEqual([
      ['everything__echo', 'success', 'Echo: hello'],
      ['notes__add_note', 'success', expect.stringMatching(/^Added note \d+: buy milk$/)],
    ]);
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toEqual([
      'everything__echo',
      'everything__get-sum',
      'notes__add_note',
      'notes__list_notes',
      'notes__delete_notes',
      'notes__fail',
      'notes__slow',
      'notes__wait_for_release',
      'notes__clear_with_confirmation',
    ]);
    const added = notes.calls.slice(from).filter((call) => call.tool === 'add_note');
    expect(added).toHaveLength(1);
    expect(added[0]?.meta[MCP_IDEMPOTENCY_KEY_META]).toEqual(expect.any(String));
  });

  it('suspends a destructive MCP tool for approval and runs it once when another runtime on the same file is told yes', async () => {
    const path = join(directory, 'approval.sqlite');
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ toolName: 'notes__delete_notes', arguments: {} }] },
      reply('Deleted.'),
    ];
    const from = notes.calls.length;
    const first = await processOn(path, steps);
    const suspended = await first.runtime.generate({ threadId: 'approval', input: 'delete my notes' });
    expect(suspended.status).toBe('waiting');
    expect(suspended.openTickets).toMatchObject([{ toolName: 'notes__delete_notes', action: 'approve' }]);
    expect(notes.calls.slice(from).map((call) => call.tool)).toEqual([]);

    const second = await processOn(path, steps);
    const outcome = await second.runtime.sendDecisions('approval', [
      { decisionId: 'yes', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    const done = await outcome.run?.result;
    expect(done?.status).toBe('done');
    expect(done?.finalText).toBe('Deleted.');
    const deletes = notes.calls.slice(from).filter((call) => call.tool === 'delete_notes');
    expect(deletes).toHaveLength(1);
    expect(results(done).at(-1)?.result).toMatchObject({
      status: 'success',
      message: expect.stringMatching(/^Deleted \d+ notes$/),
    });
    // A repeated decision changes nothing: the call does not run again.
    await second.runtime
      .sendDecisions('approval', [
        { decisionId: 'yes', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' },
      ])
      .catch(() => undefined);
    expect(notes.calls.slice(from).filter((call) => call.tool === 'delete_notes')).toHaveLength(1);
  });

  it('suspends a 2026-07-28 "input required" call, and retries it with the answer from another runtime', async () => {
    const path = join(directory, 'input.sqlite');
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ toolName: 'notes__clear_with_confirmation', arguments: {} }] },
      reply('Cleared.'),
    ];
    const rules = [{ tool: '*', decision: 'allow' }];
    const from = notes.calls.length;
    const first = await processOn(path, steps, { elicitation: true, rules });
    const suspended = await first.runtime.generate({ threadId: 'input', input: 'clear my notes' });
    expect(suspended.status).toBe('waiting');
    const ticket = suspended.openTickets[0];
    expect(ticket).toMatchObject({
      toolName: 'notes__clear_with_confirmation',
      action: MCP_INPUT_ACTION,
      message: 'Really delete every note?',
      resumeMode: 'pass-decision-to-tool',
      parameters: {
        server: 'notes',
        tool: 'clear_with_confirmation',
        inputRequests: {
          confirm: { method: 'elicitation/create', params: { message: 'Really delete every note?' } },
        },
      },
    });
    expect(notes.calls.slice(from).map((call) => [call.tool, call.arguments])).toEqual([
      ['clear_with_confirmation', { answered: null }],
    ]);

    const second = await processOn(path, steps, { elicitation: true, rules });
    const outcome = await second.runtime.sendDecisions('input', [
      {
        decisionId: 'answer',
        ticketId: ticket?.id ?? '',
        action: 'resume',
        payload: {
          responses: { confirm: { action: 'accept', content: { confirm: true, reason: 'spring' } } },
        },
      },
    ]);
    const done = await outcome.run?.result;
    expect(done?.finalText).toBe('Cleared.');
    expect(results(done).at(-1)?.result).toMatchObject({
      status: 'success',
      message: expect.stringMatching(/^Deleted \d+ notes \(spring\)$/),
    });
    const seen = notes.calls.slice(from);
    expect(seen.map((call) => call.arguments)).toEqual([
      { answered: null },
      { answered: { confirm: true, reason: 'spring' } },
    ]);
    expect(seen[1]?.meta[MCP_IDEMPOTENCY_KEY_META]).toBe(seen[0]?.meta[MCP_IDEMPOTENCY_KEY_META]);
  });

  it('gives an error result, not a pending one, when an approved call then asks for input', async () => {
    const path = join(directory, 'approved-input.sqlite');
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ toolName: 'notes__clear_with_confirmation', arguments: {} }] },
      reply('Could not.'),
    ];
    const { runtime } = await processOn(path, steps, { elicitation: true });
    const suspended = await runtime.generate({ threadId: 'approved-input', input: 'clear' });
    expect(suspended.openTickets.map((ticket) => ticket.action)).toEqual(['approve']);
    const outcome = await runtime.sendDecisions('approved-input', [
      { decisionId: 'ok', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    const done = await outcome.run?.result;
    expect(done?.status).toBe('done');
    expect(done?.openTickets).toEqual([]);
    expect(results(done).at(-1)?.result).toMatchObject({
      status: 'error',
      message:
        'The MCP server "notes" asked for input to run "clear_with_confirmation" after the call was approved; call it again to answer.',
      metadata: { mcp: { inputRequired: true } },
    });
  });

  it('gives the model an error result when a server asks for input and the agent does not offer elicitation', async () => {
    const path = join(directory, 'no-input.sqlite');
    const { runtime } = await processOn(
      path,
      [{ toolCalls: [{ toolName: 'notes__clear_with_confirmation', arguments: {} }] }, reply('Could not.')],
      { rules: [{ tool: '*', decision: 'allow' }] },
    );
    const result = await runtime.generate({ threadId: 'no-input', input: 'clear' });
    expect(result.status).toBe('done');
    // Without elicitation advertised, the server may not ask: it fails the call, and the model sees why.
    expect(results(result)[0]?.result).toMatchObject({
      status: 'error',
      message: expect.stringMatching(
        /^The MCP server "notes" failed the call of "clear_with_confirmation": Cannot request input 'confirm' \(elicitation\/create\)/,
      ),
    });
  });

  it('offers a 2025 stdio server elicitation only when the agent can suspend, and answers its request from the decision', async () => {
    const without = await processOn(join(directory, 'elicit-off.sqlite'), []);
    expect(without.mcp.toolInfos().map((info) => info.name)).not.toContain('trigger-elicitation-request');

    const path = join(directory, 'elicit.sqlite');
    const steps: ScriptedResponse[] = [
      { toolCalls: [{ toolName: 'everything__trigger-elicitation-request', arguments: {} }] },
      reply('Thanks.'),
    ];
    const servers = [
      everythingServer({ tools: { include: ['trigger-elicitation-request'] }, protocol: 'legacy' as const }),
    ];
    const first = await processOn(path, steps, { elicitation: true, servers });
    expect(first.mcp.protocolVersions().everything).toMatch(/^2025-/);
    const suspended = await first.runtime.generate({ threadId: 'elicit', input: 'ask me' });
    const ticket = suspended.openTickets[0];
    expect(ticket).toMatchObject({
      action: MCP_INPUT_ACTION,
      message: 'Please provide inputs for the following fields:',
      parameters: {
        server: 'everything',
        inputRequests: { 'elicitation-1': { method: 'elicitation/create' } },
      },
    });
    const second = await processOn(path, steps, { elicitation: true, servers });
    const outcome = await second.runtime.sendDecisions('elicit', [
      {
        decisionId: 'form',
        ticketId: ticket?.id ?? '',
        action: 'resume',
        payload: {
          responses: {
            'elicitation-1': { action: 'accept', content: { name: 'Ada Lovelace', check: true } },
          },
        },
      },
    ]);
    const done = await outcome.run?.result;
    expect(done?.finalText).toBe('Thanks.');
    const answer = results(done).at(-1)?.result;
    expect(answer?.status).toBe('success');
    expect(answer?.message).toContain('Ada Lovelace');
  });
});
