import { LunationError, type Message, type ToolResultPart } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, collectEvents, eventsOfType, reply, ScriptedModel } from '../src/testing/index.js';

function lastToolResults(messages: readonly Message[]): ToolResultPart[] {
  const results: ToolResultPart[] = [];
  for (let index = messages.length - 1; index >= 0 && messages[index]?.role === 'tool'; index--) {
    results.unshift(...(messages[index]!.content as ToolResultPart[]));
  }
  return results;
}

function files() {
  const reads: string[] = [];
  const readFile = defineTool({
    name: 'read_file',
    description: 'Reads a file',
    input: z.object({ path: z.string() }),
    execute: ({ path }) => {
      reads.push(path);
      return `contents of ${path}`;
    },
  });
  return { reads, readFile };
}

function approvalRuntime(model: ScriptedModel, extraTools: ReturnType<typeof defineTool>[] = []) {
  const { reads, readFile } = files();
  const runtime = createRuntime()
    .model('m', model)
    .agent({
      id: 'a',
      model: 'm',
      tools: [readFile, ...extraTools],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .build();
  return { runtime, reads };
}

describe('human in the loop', () => {
  it('suspends for approval, then runs the tool once approved', async () => {
    const model = new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('It says hello.')]);
    const { runtime, reads } = approvalRuntime(model);
    const first = await runtime.run({ threadId: 't', input: 'read a.txt' });
    const events = await collectEvents(first.events);
    const suspended = await first.result;
    expect(suspended.status).toBe('waiting');
    expect(suspended.termination).toEqual({ type: 'suspended' });
    expect(reads).toEqual([]);
    const ticket = suspended.openTickets[0];
    expect(ticket).toMatchObject({
      toolName: 'read_file',
      action: 'approve',
      resumeMode: 'replay-tool-call',
    });
    expect(eventsOfType(events, 'tool-call-suspended')[0]?.ticket.id).toBe(ticket?.id);
    expect(eventsOfType(events, 'run-end')[0]?.openTickets).toEqual([ticket]);

    const outcome = await runtime.sendDecisions(first.runId, [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume' },
    ]);
    expect(outcome.applied).toEqual(['d1']);
    expect(outcome.openTickets).toEqual([]);
    const resumedEvents = await collectEvents(outcome.run?.events ?? []);
    const done = await outcome.run?.result;
    expect(done?.termination).toEqual({ type: 'natural-end' });
    expect(done?.identity.runId).toBe(first.runId);
    expect(done?.finalText).toBe('It says hello.');
    expect(reads).toEqual(['a.txt']);
    expect(eventsOfType(resumedEvents, 'tool-call-resumed')).toHaveLength(1);
    expect(eventsOfType(resumedEvents, 'run-start')[0]?.resumed).toBe(true);
    const results = lastToolResults(model.requests[1]?.messages ?? []);
    expect(results.map((part) => part.result.data)).toEqual(['contents of a.txt']);
  });

  it('lets the model see a denial and answer', async () => {
    const model = new ScriptedModel([
      callTool('read_file', { path: 'secret.txt' }),
      reply('Understood, I will not read it.'),
    ]);
    const { runtime, reads } = approvalRuntime(model);
    const suspended = await runtime.generate({ threadId: 't', input: 'read secret.txt' });
    const ticketId = suspended.openTickets[0]?.id ?? '';
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId, action: 'cancel', reason: 'private file' },
    ]);
    const done = await outcome.run?.result;
    expect(done?.finalText).toBe('Understood, I will not read it.');
    expect(reads).toEqual([]);
    const denial = lastToolResults(model.requests[1]?.messages ?? [])[0];
    expect(denial?.result).toMatchObject({
      status: 'error',
      message: 'The user declined this call: private file',
    });
  });

  it('answers a frontend tool with the decision payload, rejecting a payload that fails the response schema', async () => {
    const model = new ScriptedModel([callTool('pick_color', { prompt: 'favourite?' }), reply('Blue it is.')]);
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const frontendTools = [
      {
        name: 'pick_color',
        description: 'Asks the user to pick a colour in the UI',
        parameters: { type: 'object', properties: { prompt: { type: 'string' } } },
        responseSchema: { type: 'object', properties: { color: { type: 'string' } }, required: ['color'] },
      },
    ];
    const suspended = await runtime.generate({ threadId: 't', input: 'pick', frontendTools });
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toEqual(['pick_color']);
    const ticket = suspended.openTickets[0];
    expect(ticket).toMatchObject({
      resumeMode: 'use-decision-as-result',
      action: 'frontend-tool',
      parameters: { prompt: 'favourite?' },
    });
    const bad = runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume', payload: { colour: 'blue' } },
    ]);
    await expect(bad).rejects.toMatchObject({
      code: 'decision-invalid',
      message: expect.stringMatching(/color/),
    });
    // Nothing changed: the same ticket is still open and the same decision id can still be used.
    const stillOpen = await runtime
      .sendDecisions('t', [{ decisionId: 'd0', ticketId: 'nope', action: 'resume' }])
      .catch((error) => error);
    expect(LunationError.hasCode(stillOpen, 'unknown-ticket')).toBe(true);
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume', payload: { color: 'blue' } },
    ]);
    const done = await outcome.run?.result;
    expect(done?.finalText).toBe('Blue it is.');
    expect(lastToolResults(model.requests[1]?.messages ?? [])[0]?.result).toEqual({
      status: 'success',
      data: { color: 'blue' },
    });
  });

  it('stays suspended after a partial decision, completes after the last, and ignores a repeated decisionId', async () => {
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'read_file', arguments: { path: 'a' } },
          { toolName: 'read_file', arguments: { path: 'b' } },
        ],
      },
      reply('Both read.'),
    ]);
    const { runtime, reads } = approvalRuntime(model);
    const suspended = await runtime.generate({ threadId: 't', input: 'read both' });
    expect(suspended.openTickets).toHaveLength(2);
    const [first, second] = suspended.openTickets;
    const partial = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: first?.id ?? '', action: 'resume' },
    ]);
    expect(partial.applied).toEqual(['d1']);
    expect(partial.openTickets.map((ticket) => ticket.id)).toEqual([second?.id]);
    expect(partial.run).toBeUndefined();
    expect(reads).toEqual([]);
    const repeated = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: first?.id ?? '', action: 'resume' },
    ]);
    expect(repeated.applied).toEqual([]);
    expect(repeated.ignored).toEqual(['d1']);
    expect(repeated.openTickets.map((ticket) => ticket.id)).toEqual([second?.id]);
    const last = await runtime.sendDecisions('t', [
      { decisionId: 'd2', ticketId: second?.id ?? '', action: 'resume' },
    ]);
    const done = await last.run?.result;
    expect(done?.finalText).toBe('Both read.');
    expect(reads).toEqual(['a', 'b']);
    expect(model.callCount).toBe(2);
    // Applying the same decisions again changes nothing.
    const again = await runtime
      .sendDecisions('t', [{ decisionId: 'd2', ticketId: second?.id ?? '', action: 'resume' }])
      .catch((error) => error);
    expect(LunationError.hasCode(again, 'unknown-ticket') || again.ignored?.includes('d2')).toBe(true);
    expect(reads).toEqual(['a', 'b']);
  });

  it('never runs a call declined by a partial decision once the last ticket is decided', async () => {
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'read_file', arguments: { path: 'secret' } },
          { toolName: 'read_file', arguments: { path: 'public' } },
        ],
      },
      reply('Read one.'),
    ]);
    const { runtime, reads } = approvalRuntime(model);
    const suspended = await runtime.generate({ threadId: 't', input: 'read both' });
    const [first, second] = suspended.openTickets;
    await runtime.sendDecisions('t', [{ decisionId: 'd1', ticketId: first?.id ?? '', action: 'cancel' }]);
    const last = await runtime.sendDecisions('t', [
      { decisionId: 'd2', ticketId: second?.id ?? '', action: 'resume' },
    ]);
    expect((await last.run?.result)?.finalText).toBe('Read one.');
    expect(reads).toEqual(['public']);
    const results = lastToolResults(model.requests[1]?.messages ?? []);
    expect(results.map((part) => part.result.status)).toEqual(['error', 'success']);
    expect(results[0]?.result.message).toBe('The user declined this call.');
  });

  it('supersedes open tickets with a new user message, and the model sees why', async () => {
    const model = new ScriptedModel([
      callTool('read_file', { path: 'a' }),
      reply('OK, something else then.'),
    ]);
    const { runtime, reads } = approvalRuntime(model);
    const suspended = await runtime.generate({ threadId: 't', input: 'read a' });
    expect(suspended.openTickets).toHaveLength(1);
    const next = await runtime.generate({ threadId: 't', input: 'never mind' });
    expect(next.finalText).toBe('OK, something else then.');
    expect(next.identity.runId).not.toBe(suspended.identity.runId);
    expect(reads).toEqual([]);
    const request = model.requests[1]?.messages ?? [];
    expect(request.map((message) => message.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    expect((request[2]!.content[0] as ToolResultPart).result.message).toMatch(
      /Cancelled: the user sent a new message/,
    );
  });

  it('rejects a second run on a busy thread naming the active run, and cancels through the runtime', async () => {
    const model = new ScriptedModel([{ text: 'slow answer', delayMs: 5_000 }]);
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const first = await runtime.run({ threadId: 't', input: 'hi' });
    const second = runtime.run({ threadId: 't', input: 'again' });
    await expect(second).rejects.toMatchObject({
      code: 'thread-busy',
      message: `Thread "t" already has an active run (run ${first.runId}); wait for it or cancel it`,
    });
    expect(runtime.cancel('t')).toBe(true);
    const result = await first.result;
    expect(result.termination.type).toBe('cancelled');
    expect(runtime.cancel('t')).toBe(false);
    // The thread is free again.
    const model2 = new ScriptedModel([reply('fast')]);
    const runtime2 = createRuntime().model('m', model2).agent({ id: 'a', model: 'm' }).build();
    expect((await runtime2.generate({ threadId: 't', input: 'x' })).finalText).toBe('fast');
  });
});

describe('permission plugin', () => {
  it('applies allow, deny and ask to three tools, and remembers "always allow" for the thread', async () => {
    const ran: string[] = [];
    const tool = (name: string) =>
      defineTool({
        name,
        description: name,
        input: z.object({}),
        execute: () => {
          ran.push(name);
          return 'ok';
        },
      });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'calc', arguments: {} },
          { toolName: 'shell', arguments: {} },
          { toolName: 'fetch_url', arguments: {} },
        ],
      },
      reply('step one done'),
      callTool('fetch_url', {}),
      reply('fetched again without asking'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [tool('calc'), tool('shell'), tool('fetch_url')],
        plugins: [
          {
            plugin: permissionPlugin,
            config: {
              rules: [
                { tool: '*', decision: 'allow' },
                { tool: 'shell', decision: 'deny', message: 'No shell access.' },
                { tool: 'fetch_*', decision: 'ask' },
              ],
            },
          },
        ],
      })
      .build();
    const suspended = await runtime.generate({ threadId: 't', input: 'go' });
    expect(ran).toEqual(['calc']);
    expect(suspended.openTickets.map((ticket) => ticket.toolName)).toEqual(['fetch_url']);
    const outcome = await runtime.sendDecisions('t', [
      {
        decisionId: 'd1',
        ticketId: suspended.openTickets[0]?.id ?? '',
        action: 'resume',
        payload: { always: true },
      },
    ]);
    expect((await outcome.run?.result)?.finalText).toBe('step one done');
    expect(ran).toEqual(['calc', 'fetch_url']);
    const denied = model.requests[1]?.messages.flatMap((message) =>
      message.role === 'tool' ? message.content : [],
    );
    expect(denied?.find((part) => part.toolName === 'shell')?.result).toMatchObject({
      status: 'error',
      message: 'No shell access.',
    });
    const later = await runtime.generate({ threadId: 't', input: 'fetch again' });
    expect(later.status).toBe('done');
    expect(later.finalText).toBe('fetched again without asking');
    expect(ran).toEqual(['calc', 'fetch_url', 'fetch_url']);
  });

  it('matches rules on tool annotations: destructive tools ask, read-only tools pass, unannotated tools fall to the default', async () => {
    const ran: string[] = [];
    const tool = (name: string, annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean }) =>
      defineTool({
        name,
        description: name,
        input: z.object({}),
        ...(annotations ? { annotations } : {}),
        execute: () => {
          ran.push(name);
          return 'ok';
        },
      });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'srv__drop_table', arguments: {} },
          { toolName: 'srv__list_tables', arguments: {} },
          { toolName: 'srv__plain', arguments: {} },
        ],
      },
      reply('done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [
          tool('srv__drop_table', { readOnlyHint: false, destructiveHint: true }),
          tool('srv__list_tables', { readOnlyHint: true }),
          tool('srv__plain'),
        ],
        plugins: [
          {
            plugin: permissionPlugin,
            config: {
              defaultDecision: 'deny',
              rules: [
                { tool: 'srv__*', annotations: { readOnlyHint: true }, decision: 'allow' },
                { tool: 'srv__*', annotations: { destructiveHint: true }, decision: 'ask' },
              ],
            },
          },
        ],
      })
      .build();
    const suspended = await runtime.generate({ threadId: 't', input: 'go' });
    expect(suspended.openTickets.map((ticket) => ticket.toolName)).toEqual(['srv__drop_table']);
    expect(ran).toEqual(['srv__list_tables']);
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: suspended.openTickets[0]?.id ?? '', action: 'resume' },
    ]);
    expect((await outcome.run?.result)?.finalText).toBe('done');
    expect(ran).toEqual(['srv__list_tables', 'srv__drop_table']);
    const results = model.requests[1]?.messages.flatMap((message) =>
      message.role === 'tool' ? message.content : [],
    );
    expect(results?.find((part) => part.toolName === 'srv__plain')?.result).toMatchObject({
      status: 'error',
      metadata: { permission: 'denied' },
    });
  });
});
