import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectEvents, eventsOfType, ScriptedModel } from '@lunation/runtime/testing';
import { MemoryStore } from '@lunation/store-memory';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAssistantRuntime } from './create-assistant-runtime.js';
import { seedSandbox } from './tools/seed-sandbox.js';

describe('createAssistantRuntime', () => {
  let root: string;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'assistant-runtime-'));
    await seedSandbox(join(root, 'sandbox'));
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('asks before read_file only, and streams the slow task progress before its result', async () => {
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'calculator', arguments: { expression: '2 + 2' } },
          { toolName: 'current_time', arguments: { timeZone: 'UTC' } },
          { toolName: 'slow_task', arguments: { steps: 3 } },
          { toolName: 'read_file', arguments: { path: 'README.md' } },
        ],
      },
    ]);
    const runtime = createAssistantRuntime({
      model,
      store: new MemoryStore(),
      sandbox: join(root, 'sandbox'),
      slowTask: { stepMs: 1 },
    });
    const run = await runtime.run({ threadId: 't', input: 'do everything' });
    const events = await collectEvents(run.events);
    const result = await run.result;

    expect(result.status).toBe('waiting');
    expect(result.openTickets.map((ticket) => [ticket.toolName, ticket.message])).toEqual([
      ['read_file', 'The assistant wants to read a file in the sandbox.'],
    ]);
    expect(eventsOfType(events, 'tool-result').map((event) => [event.toolName, event.status])).toEqual([
      ['calculator', 'succeeded'],
      ['current_time', 'succeeded'],
      ['slow_task', 'succeeded'],
    ]);
    const slowTask = events
      .filter((event) => 'toolName' in event && event.toolName === 'slow_task')
      .map((event) => (event.type === 'tool-progress' ? JSON.stringify(event.progress) : event.type));
    expect(slowTask).toEqual([
      'tool-call-start',
      'tool-call-end',
      'tool-execution-start',
      '{"done":1,"total":3,"message":"step 1 of 3"}',
      '{"done":2,"total":3,"message":"step 2 of 3"}',
      '{"done":3,"total":3,"message":"step 3 of 3"}',
      'tool-result',
    ]);
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toEqual([
      'calculator',
      'current_time',
      'read_file',
      'slow_task',
      'ask_user',
    ]);
  });
});
