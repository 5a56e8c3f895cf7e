import type { Message, ModelRequest, ModelStreamPart, ToolResult } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { DemoModel } from './demo-model.js';

const TOOLS = ['calculator', 'current_time', 'read_file', 'slow_task'].map((name) => ({
  name,
  description: name,
  parameters: { type: 'object' },
}));

const user = (text: string): Message => ({
  id: `u-${text}`,
  role: 'user',
  content: [{ type: 'text', text }],
});

function called(toolName: string, args: unknown, toolCallId = `call-${toolName}`): Message {
  return {
    id: `a-${toolCallId}`,
    role: 'assistant',
    content: [{ type: 'tool-call', toolCallId, toolName, arguments: JSON.stringify(args) }],
  };
}

function answered(toolName: string, result: ToolResult, toolCallId = `call-${toolName}`): Message {
  return {
    id: `t-${toolCallId}`,
    role: 'tool',
    content: [{ type: 'tool-result', toolCallId, toolName, result }],
  };
}

async function stream(messages: Message[], tools = TOOLS, signal?: AbortSignal): Promise<ModelStreamPart[]> {
  const request: ModelRequest = { messages, tools };
  const parts: ModelStreamPart[] = [];
  for await (const part of new DemoModel({ tokenDelayMs: 0 }).stream(request, signal ? { signal } : {})) {
    parts.push(part);
  }
  return parts;
}

const textOf = (parts: ModelStreamPart[]) =>
  parts.map((part) => (part.type === 'text-delta' ? part.delta : '')).join('');
const callOf = (parts: ModelStreamPart[]) => {
  const end = parts.find((part) => part.type === 'tool-call-end');
  return end && { toolName: end.toolName, arguments: JSON.parse(end.arguments) };
};

describe('DemoModel', () => {
  it('calls any available tool by name with JSON arguments ("call <tool> {...}"), and says why it cannot', async () => {
    const tools = [
      ...TOOLS,
      { name: 'everything__echo', description: 'echo', parameters: { type: 'object' } },
    ];
    const call = await stream([user('call everything__echo {"message": "hi there"}')], tools);
    expect(callOf(call)).toEqual({ toolName: 'everything__echo', arguments: { message: 'hi there' } });
    expect(textOf(call)).toBe('Calling everything__echo. ');
    const bare = await stream([user('use calculator')], tools);
    expect(callOf(bare)).toEqual({ toolName: 'calculator', arguments: {} });

    const after = await stream(
      [
        user('call everything__echo {"message": "hi"}'),
        called('everything__echo', { message: 'hi' }),
        answered('everything__echo', { status: 'success', data: { echoed: 'hi' } }),
      ],
      tools,
    );
    expect(textOf(after)).toBe('The tool "everything__echo" answered: {"echoed":"hi"}.');

    expect(callOf(await stream([user('call everything__echo {"message": "hi"}')]))).toBeUndefined();
    expect(textOf(await stream([user('call everything__echo {"message": "hi"}')]))).toContain(
      'the tool "everything__echo" is not available here',
    );
    expect(textOf(await stream([user('call everything__echo {not json}')], tools))).toBe(
      'Those arguments are not JSON: {not json}',
    );
  });

  it('streams word by word, then a tool call, usage and finish, the same way every time', async () => {
    const parts = await stream([user('hello')]);
    expect(parts.filter((part) => part.type === 'text-delta').length).toBeGreaterThan(5);
    expect(parts.slice(-5).map((part) => part.type)).toEqual([
      'tool-call-start',
      'tool-call-delta',
      'tool-call-end',
      'usage',
      'finish',
    ]);
    expect(parts.at(-1)).toEqual({ type: 'finish', stopReason: 'tool-use' });
    expect(await stream([user('hello')])).toEqual(parts);
  });

  it('tours the calculator, then read_file (which needs approval), then answers', async () => {
    const calculatorCall = { expression: '(2 + 3) * 7' };
    const history = [user('hello')];
    expect(callOf(await stream(history))).toEqual({ toolName: 'calculator', arguments: calculatorCall });

    history.push(called('calculator', calculatorCall));
    history.push(
      answered('calculator', { status: 'success', data: { expression: '(2 + 3) * 7', result: 35 } }),
    );
    const second = await stream(history);
    expect(textOf(second)).toMatch(/^\(2 \+ 3\) \* 7 = 35\. Next I would like to read README\.md/);
    expect(callOf(second)).toEqual({ toolName: 'read_file', arguments: { path: 'README.md' } });

    history.push(called('read_file', { path: 'README.md' }));
    history.push(
      answered('read_file', {
        status: 'error',
        message: 'The user declined this call.',
        metadata: { declined: true },
      }),
    );
    const third = await stream(history);
    expect(textOf(third)).toMatch(/^All right, I will not do that\./);
    expect(callOf(third)).toBeUndefined();
    expect(third.at(-1)).toEqual({ type: 'finish', stopReason: 'end-turn' });
  });

  it.each([
    ['what is 12 * (3 + 4)?', { toolName: 'calculator', arguments: { expression: '12 * (3 + 4)' } }],
    ['compute sqrt(2) / 2 please', { toolName: 'calculator', arguments: { expression: 'sqrt(2) / 2' } }],
    ['what time is it in Tokyo', { toolName: 'current_time', arguments: { timeZone: 'Asia/Tokyo' } }],
    ['time in Europe/Lisbon?', { toolName: 'current_time', arguments: { timeZone: 'Europe/Lisbon' } }],
    ['what day is it', { toolName: 'current_time', arguments: {} }],
    ['read "notes/todo.txt"', { toolName: 'read_file', arguments: { path: 'notes/todo.txt' } }],
    ['read the readme', { toolName: 'read_file', arguments: { path: 'README.md' } }],
    ['list the files', { toolName: 'read_file', arguments: { path: '.' } }],
    ['run the slow task', { toolName: 'slow_task', arguments: { steps: 5 } }],
    ['a long job with 3 steps', { toolName: 'slow_task', arguments: { steps: 3 } }],
    ['tell me a joke', undefined],
  ])('answers %j (not the first message) with %j', async (text, expected) => {
    expect(callOf(await stream([user('earlier'), user(text)]))).toEqual(expected);
  });

  it('describes a tool result', async () => {
    const parts = await stream([
      user('earlier'),
      user('what time is it'),
      called('current_time', {}),
      answered('current_time', {
        status: 'success',
        data: { timeZone: 'UTC', localTime: '2026-01-01 00:00:00', weekday: 'Thursday', utcOffset: 'GMT' },
      }),
    ]);
    expect(textOf(parts)).toBe('It is Thursday, 2026-01-01 00:00:00 in UTC (GMT).');
  });

  it('does not call a tool it was not offered', async () => {
    const parts = await stream([user('hello')], []);
    expect(callOf(parts)).toBeUndefined();
    expect(textOf(parts)).toContain('the tool "calculator" is not available here');
  });

  it('stops with a cancelled error when aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(stream([user('hello')], TOOLS, controller.signal)).rejects.toMatchObject({
      code: 'cancelled',
    });
  });
});
