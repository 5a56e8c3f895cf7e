import { LunationError, type ToolResultPart } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  type AgentDefinition,
  addContextMessage,
  createRuntime,
  defineAction,
  definePlugin,
  defineStateKey,
  defineTool,
  type PhaseContext,
  scheduleAction,
  updateState,
} from '../src/index.js';
import {
  callTool,
  collectEvents,
  eventsOfType,
  eventTypes,
  reply,
  ScriptedModel,
  streamedText,
} from '../src/testing/index.js';

function addTool(counter: { calls: number }) {
  return defineTool({
    name: 'add',
    description: 'Adds two numbers',
    input: z.object({ a: z.number(), b: z.number() }),
    execute: ({ a, b }) => {
      counter.calls++;
      return { sum: a + b };
    },
  });
}

function runtimeWith(
  model: ScriptedModel,
  agent: Partial<AgentDefinition> = {},
  extra: (b: ReturnType<typeof createRuntime>) => void = () => {},
) {
  const builder = createRuntime()
    .model('m', model)
    .agent({ id: 'a', model: 'm', systemPrompt: 'You add.', ...agent });
  extra(builder);
  return builder.build();
}

describe('agent loop', () => {
  it('calls a tool then answers in 2 steps, with events in the documented order and the tool run once', async () => {
    const counter = { calls: 0 };
    const model = new ScriptedModel([callTool('add', { a: 1, b: 2 }), reply('The sum is 3.')], {
      textChunkSize: 4,
      argumentsChunkSize: 5,
    });
    const runtime = runtimeWith(model, { tools: [addTool(counter)] });
    const handle = await runtime.run({ threadId: 't1', input: 'What is 1+2?' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;
    expect(result.termination).toEqual({ type: 'natural-end' });
    expect(result.status).toBe('done');
    expect(result.steps).toBe(2);
    expect(result.finalText).toBe('The sum is 3.');
    expect(counter.calls).toBe(1);
    expect(eventTypes(events)).toEqual([
      'run-start',
      'step-start',
      'tool-call-start',
      'tool-call-delta',
      'tool-call-end',
      'tool-execution-start',
      'tool-result',
      'step-end',
      'step-start',
      'text-delta',
      'step-end',
      'run-end',
    ]);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index));
    expect(streamedText(events)).toBe('The sum is 3.');
    const toolResult = eventsOfType(events, 'tool-result')[0];
    expect(toolResult?.result).toEqual({ status: 'success', data: { sum: 3 } });
    // The second request carries the system prompt, the user input, the call and its result.
    const second = model.requests[1];
    if (!second) throw new Error('expected a second request');
    expect(second?.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect((second.messages[3]!.content[0] as ToolResultPart).result.data).toEqual({ sum: 3 });
    expect(second?.tools.map((tool) => tool.name)).toEqual(['add']);
    expect(second?.tools[0]?.parameters).toMatchObject({ type: 'object', required: ['a', 'b'] });
    const end = eventsOfType(events, 'run-end')[0];
    expect(end).toMatchObject({ finalText: 'The sum is 3.', steps: 2, termination: { type: 'natural-end' } });
  });

  it('keeps each signed reasoning block as its own part, in stream order', async () => {
    const model = new ScriptedModel([
      {
        parts: [
          { type: 'reasoning-delta', delta: 'first ' },
          { type: 'reasoning-delta', delta: 'thought' },
          { type: 'reasoning-delta', delta: '', signature: 'sig-1' },
          { type: 'text-delta', delta: 'Let me check. ' },
          { type: 'reasoning-delta', delta: 'second thought' },
          { type: 'reasoning-delta', delta: '', signature: 'sig-2' },
          { type: 'reasoning-delta', delta: 'opaque', redacted: true },
          { type: 'text-delta', delta: 'Done.' },
          { type: 'finish', stopReason: 'end-turn' },
        ],
      },
    ]);
    const result = await runtimeWith(model).generate({ threadId: 't', input: 'think' });
    expect(result.finalText).toBe('Let me check. Done.');
    expect(result.messages.at(-1)?.content).toEqual([
      { type: 'reasoning', text: 'first thought', signature: 'sig-1' },
      { type: 'text', text: 'Let me check. ' },
      { type: 'reasoning', text: 'second thought', signature: 'sig-2' },
      { type: 'reasoning', text: 'opaque', redacted: true },
      { type: 'text', text: 'Done.' },
    ]);
  });

  it('keeps the thread history across runs', async () => {
    const model = new ScriptedModel([reply('first'), reply('second')]);
    const runtime = runtimeWith(model);
    await (await runtime.run({ threadId: 't', input: 'one' })).result;
    await (await runtime.run({ threadId: 't', input: 'two' })).result;
    expect(model.requests[1]?.messages.map((message) => message.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
    ]);
  });

  it('turns invalid arguments, an unknown tool and a throwing tool into error results and still ends naturally', async () => {
    const counter = { calls: 0 };
    const boom = defineTool({
      name: 'boom',
      description: 'Throws',
      input: z.object({}),
      execute: () => {
        throw new Error('kaboom');
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'add', arguments: { a: 'one', b: 2 } },
          { toolName: 'add', arguments: '{"a": 1,' },
          { toolName: 'nope', arguments: {} },
          { toolName: 'boom', arguments: {} },
        ],
      },
      reply('Sorry, those failed.'),
    ]);
    const runtime = runtimeWith(model, { tools: [addTool(counter), boom] });
    const handle = await runtime.run({ threadId: 't', input: 'go' });
    const events = await collectEvents(handle.events);
    const result = await handle.result;
    expect(result.termination).toEqual({ type: 'natural-end' });
    expect(result.finalText).toBe('Sorry, those failed.');
    expect(counter.calls).toBe(0);
    const results = eventsOfType(events, 'tool-result').map((event) => event.result);
    expect(results.map((entry) => entry.status)).toEqual(['error', 'error', 'error', 'error']);
    expect(results[0]?.message).toMatch(/Invalid arguments for "add": a: .*expected number/);
    expect(results[1]?.message).toMatch(/not valid JSON/);
    expect(results[2]?.message).toMatch(/Unknown tool "nope"/);
    expect(results[3]?.message).toBe('Tool "boom" failed: kaboom');
    const toolMessage = model.requests[1]?.messages.at(-1);
    expect(toolMessage?.role).toBe('tool');
    expect(toolMessage?.content).toHaveLength(4);
  });

  it('stops at max rounds and on each stop condition, keeping the last reply', async () => {
    const loopForever = () =>
      callTool('add', { a: 1, b: 1 }, { text: 'again', usage: { inputTokens: 100, outputTokens: 50 } });
    const cases: Array<{ agent: Partial<AgentDefinition>; code: string; steps: number }> = [
      { agent: { maxRounds: 3 }, code: 'max-rounds', steps: 3 },
      {
        agent: { stopConditions: [{ type: 'token-budget', maxTokens: 300 }] },
        code: 'token-budget',
        steps: 2,
      },
      { agent: { stopConditions: [{ type: 'timeout', ms: 0 }] }, code: 'timeout', steps: 1 },
      {
        agent: { stopConditions: [{ type: 'tool-called', toolName: 'add' }] },
        code: 'tool-called',
        steps: 1,
      },
      {
        agent: { stopConditions: [{ type: 'custom', code: 'third', check: (stats) => stats.step === 3 }] },
        code: 'third',
        steps: 3,
      },
    ];
    for (const { agent, code, steps } of cases) {
      const model = new ScriptedModel(() => loopForever());
      const runtime = runtimeWith(model, { tools: [addTool({ calls: 0 })], ...agent });
      const result = await runtime.generate({ threadId: 't', input: 'go' });
      expect(result.termination).toMatchObject({ type: 'stopped', code });
      expect(result.steps).toBe(steps);
      expect(result.finalText).toBe('again');
      expect(result.messages.at(-1)?.role).toBe('tool');
    }
    const failing = defineTool({
      name: 'fail',
      description: 'fails',
      input: z.object({}),
      execute: () => Promise.reject(new Error('no')),
    });
    const model = new ScriptedModel(() => callTool('fail', {}));
    const runtime = runtimeWith(model, {
      tools: [failing],
      stopConditions: [{ type: 'consecutive-tool-errors', max: 2 }],
    });
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result.termination).toMatchObject({ type: 'stopped', code: 'consecutive-tool-errors' });
    expect(result.steps).toBe(2);
  });

  it('ends cancelled when aborted during the model stream, with no tool call left running', async () => {
    const started: string[] = [];
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      input: z.object({}),
      execute: () => {
        started.push('slow');
        return 'done';
      },
    });
    const model = new ScriptedModel(
      [{ text: 'thinking about it for a while', toolCalls: [{ toolName: 'slow', arguments: {} }] }],
      {
        textChunkSize: 2,
        partDelayMs: 20,
      },
    );
    const runtime = runtimeWith(model, { tools: [slow] });
    const controller = new AbortController();
    const handle = await runtime.run({ threadId: 't', input: 'go', signal: controller.signal });
    const events: string[] = [];
    for await (const event of handle.events) {
      events.push(event.type);
      if (event.type === 'text-delta' && events.filter((type) => type === 'text-delta').length === 2)
        controller.abort();
    }
    const result = await handle.result;
    expect(result.termination.type).toBe('cancelled');
    expect(result.status).toBe('done');
    expect(started).toEqual([]);
    expect(events).not.toContain('tool-execution-start');
    expect(events.at(-1)).toBe('run-end');
    expect(runtime.activeRun('t')).toBeUndefined();
  });

  it('never runs a call whose stream started it but never ended it, and tells the model why', async () => {
    let runs = 0;
    // No required field: empty arguments would pass validation, so only the loop can keep it from running.
    const ping = defineTool({
      name: 'ping',
      description: 'pings',
      input: z.object({ host: z.string().optional() }),
      execute: () => {
        runs++;
        return 'pong';
      },
    });
    const model = new ScriptedModel([
      {
        parts: [
          { type: 'tool-call-start', toolCallId: 'cut-1', toolName: 'ping' },
          { type: 'tool-call-delta', toolCallId: 'cut-1', argumentsDelta: '{"ho' },
          { type: 'finish', stopReason: 'max-tokens' },
        ],
      },
      reply('I could not finish the call'),
    ]);
    const runtime = runtimeWith(model, { tools: [ping] });
    const result = await runtime.generate({ threadId: 't', input: 'ping it' });
    expect(runs).toBe(0);
    expect(result.finalText).toBe('I could not finish the call');
    const request = model.requests[1]?.messages ?? [];
    expect(request.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(request[3]?.content[0]).toMatchObject({
      toolCallId: 'cut-1',
      result: {
        status: 'error',
        message: expect.stringContaining("cut off before this tool call's arguments were complete"),
      },
    });
  });

  it('answers a call cut off by cancellation as cancelled, and never runs it again on the next run', async () => {
    let runs = 0;
    let started: () => void = () => {};
    const startedPromise = new Promise<void>((resolve) => {
      started = resolve;
    });
    const slow = defineTool({
      name: 'slow',
      description: 'slow',
      input: z.object({}),
      execute: async (_, context) => {
        runs++;
        started();
        await new Promise((_, reject) =>
          context.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        );
        return 'finished';
      },
    });
    const model = new ScriptedModel([callTool('slow', {}), reply('six times seven is 42')]);
    const runtime = runtimeWith(model, { tools: [slow] });
    const handle = await runtime.run({ threadId: 't', input: 'go slow' });
    await startedPromise;
    runtime.cancel('t');
    expect((await handle.result).termination.type).toBe('cancelled');
    const next = await runtime.generate({ threadId: 't', input: 'what is 6 * 7?' });
    expect(next.finalText).toBe('six times seven is 42');
    expect(runs).toBe(1);
    const request = model.requests[1]?.messages ?? [];
    expect(request.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
    expect(request[3]?.content[0]).toMatchObject({
      result: { status: 'error', message: 'Cancelled: the run was cancelled while this call ran.' },
    });
  });

  it('runs tools in parallel when asked, overlapping in time, with results in call order', async () => {
    const log: string[] = [];
    const sleepy = defineTool({
      name: 'sleepy',
      description: 'sleeps',
      input: z.object({ ms: z.number(), name: z.string() }),
      execute: async ({ ms, name }) => {
        log.push(`start ${name}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        log.push(`end ${name}`);
        return name;
      },
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'sleepy', arguments: { ms: 60, name: 'a' } },
          { toolName: 'sleepy', arguments: { ms: 10, name: 'b' } },
          { toolName: 'sleepy', arguments: { ms: 30, name: 'c' } },
        ],
      },
      reply('ok'),
    ]);
    const runtime = runtimeWith(model, {
      tools: [sleepy],
      toolExecution: { mode: 'parallel', concurrency: 3 },
    });
    await runtime.generate({ threadId: 't', input: 'go' });
    expect(log.slice(0, 3)).toEqual(['start a', 'start b', 'start c']);
    expect(log.slice(3)).toEqual(['end b', 'end c', 'end a']);
    const toolMessage = model.requests[1]?.messages.at(-1);
    expect(toolMessage?.content.map((part) => (part as ToolResultPart).result.data)).toEqual(['a', 'b', 'c']);

    // Sequential (the default) does not overlap.
    log.length = 0;
    const sequentialModel = new ScriptedModel([
      {
        toolCalls: [
          { toolName: 'sleepy', arguments: { ms: 20, name: 'x' } },
          { toolName: 'sleepy', arguments: { ms: 1, name: 'y' } },
        ],
      },
      reply('ok'),
    ]);
    await runtimeWith(sequentialModel, { tools: [sleepy] }).generate({ threadId: 't', input: 'go' });
    expect(log).toEqual(['start x', 'end x', 'start y', 'end y']);
  });
});

describe('phases, state and plugins', () => {
  it('gives every phase its context; a state update in one phase is visible in the next', async () => {
    const seen: Array<{ phase: string; step: number; marks: string[]; extra?: unknown }> = [];
    const marks = defineStateKey<string[], string>({
      name: 'test.marks',
      schema: z.array(z.string()),
      initial: () => [],
      apply: (value, mark) => [...value, mark],
      merge: 'commutative',
    });
    const recorder = definePlugin({
      name: 'recorder',
      register(registrar) {
        registrar.stateKey(marks);
        const phases = [
          'RunStart',
          'StepStart',
          'BeforeInference',
          'AfterInference',
          'BeforeToolExecute',
          'AfterToolExecute',
          'StepEnd',
          'RunEnd',
        ] as const;
        for (const phase of phases) {
          registrar.hook(phase, (context: PhaseContext) => {
            let extra: unknown;
            if (phase === 'AfterInference') extra = context.response?.toolCalls.map((call) => call.toolName);
            if (phase === 'BeforeToolExecute') extra = context.toolCall?.input;
            if (phase === 'AfterToolExecute') extra = context.toolResult?.data;
            seen.push({ phase, step: context.step, marks: context.state.get(marks), extra });
            expect(context.identity.threadId).toBe('t');
            expect(context.agent.id).toBe('a');
            expect(context.signal).toBeInstanceOf(AbortSignal);
            return { updates: [updateState(marks, phase)] };
          });
        }
        registrar.toolGate((context) => {
          seen.push({
            phase: 'ToolGate',
            step: context.step,
            marks: context.state.get(marks),
            extra: context.toolCall.toolName,
          });
          return undefined;
        });
      },
    });
    const model = new ScriptedModel([callTool('add', { a: 2, b: 3 }), reply('5')]);
    const runtime = runtimeWith(model, { tools: [addTool({ calls: 0 })], plugins: [recorder] });
    await runtime.generate({ threadId: 't', input: 'go' });
    expect(seen.map((entry) => `${entry.phase}@${entry.step}`)).toEqual([
      'RunStart@0',
      'StepStart@1',
      'BeforeInference@1',
      'AfterInference@1',
      'ToolGate@1',
      'BeforeToolExecute@1',
      'AfterToolExecute@1',
      'StepEnd@1',
      'StepStart@2',
      'BeforeInference@2',
      'AfterInference@2',
      'StepEnd@2',
      'RunEnd@2',
    ]);
    expect(seen[1]?.marks).toEqual(['RunStart']);
    expect(seen[3]?.extra).toEqual(['add']);
    expect(seen[4]?.marks).toEqual(['RunStart', 'StepStart', 'BeforeInference', 'AfterInference']);
    expect(seen[5]?.extra).toEqual({ a: 2, b: 3 });
    expect(seen[6]?.extra).toEqual({ sum: 5 });
    expect(seen.at(-1)?.marks).toHaveLength(11);
  });

  it('resolves two hooks writing one exclusive key deterministically (re-run serially on fresh snapshots)', async () => {
    const outcomes: string[][] = [];
    for (let attempt = 0; attempt < 5; attempt++) {
      const log = defineStateKey<string[]>({
        name: 'test.log',
        schema: z.array(z.string()),
        initial: () => [],
      });
      const calls: string[] = [];
      const plugin = definePlugin({
        name: 'racers',
        register(registrar) {
          registrar.stateKey(log);
          registrar.hook('StepStart', async (context) => {
            calls.push(`first saw ${context.state.get(log).length}`);
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
            return { updates: [updateState(log, [...context.state.get(log), 'first'])] };
          });
          registrar.hook('StepStart', async (context) => {
            calls.push(`second saw ${context.state.get(log).length}`);
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
            return { updates: [updateState(log, [...context.state.get(log), 'second'])] };
          });
          registrar.hook('StepEnd', (context) => {
            outcomes.push([...context.state.get(log), ...calls]);
          });
        },
      });
      await runtimeWith(new ScriptedModel([reply('x')]), { plugins: [plugin] }).generate({
        threadId: 't',
        input: 'go',
      });
    }
    // Both writes survive (no last-writer-wins): the second hook is re-run on the snapshot holding the first's write.
    expect(outcomes[0]).toEqual(['first', 'second', 'first saw 0', 'second saw 0', 'second saw 1']);
    for (const outcome of outcomes) expect(outcome).toEqual(outcomes[0]);
  });

  it('handles scheduled actions in their phase, with a bounded number of rounds', async () => {
    const ping = defineAction<number>('test.ping', 'BeforeInference');
    const count = defineStateKey<number>({ name: 'test.count', schema: z.number(), initial: () => 0 });
    const plugin = definePlugin<{ rounds: number }>({
      name: 'pinger',
      configSchema: z.object({ rounds: z.number().int() }),
      register(registrar) {
        registrar.stateKey(count);
        registrar.hook('StepStart', () => ({ actions: [scheduleAction(ping, 1)] }));
        registrar.onAction(ping, (n, context) => ({
          updates: [updateState(count, context.state.get(count) + 1)],
          actions: n < registrar.config.rounds ? [scheduleAction(ping, n + 1)] : [],
        }));
        registrar.hook('AfterInference', (context) => ({
          actions: [],
          updates: [updateState(count, context.state.get(count) * 100)],
        }));
      },
    });
    const model = new ScriptedModel([reply('x')]);
    const ok = runtimeWith(model, { plugins: [{ plugin, config: { rounds: 3 } }] });
    const result = await ok.generate({ threadId: 't', input: 'go' });
    expect(result.termination).toEqual({ type: 'natural-end' });

    const runaway = runtimeWith(new ScriptedModel([reply('x')]), {
      plugins: [{ plugin, config: { rounds: 100 } }],
    });
    const failed = await runaway.generate({ threadId: 't', input: 'go' });
    expect(failed.termination).toMatchObject({ type: 'error', error: { code: 'phase-loop-exceeded' } });
  });

  it('adds context messages through the built-in action, for one request only', async () => {
    const plugin = definePlugin({
      name: 'reminder',
      register(registrar) {
        registrar.hook('BeforeInference', (context) =>
          context.step === 1
            ? {
                actions: [scheduleAction(addContextMessage, { key: 'r', role: 'system', text: 'Be brief.' })],
              }
            : undefined,
        );
      },
    });
    const model = new ScriptedModel([callTool('add', { a: 1, b: 1 }), reply('2')]);
    await runtimeWith(model, { plugins: [plugin], tools: [addTool({ calls: 0 })] }).generate({
      threadId: 't',
      input: 'go',
    });
    const texts = (index: number) =>
      model.requests[index]?.messages.map((message) =>
        message.content.map((part) => ('text' in part ? part.text : part.type)).join(''),
      );
    expect(texts(0)?.at(-1)).toBe('Be brief.');
    expect(texts(1)).not.toContain('Be brief.');
  });

  it('fails agent resolution for a bad plugin config, naming the plugin and the field, with every problem listed', () => {
    const plugin = definePlugin<{ limit: number }>({
      name: 'limiter',
      configSchema: z.object({ limit: z.number().int().positive() }),
      register() {},
    });
    const build = () =>
      createRuntime()
        .model('m', new ScriptedModel([]))
        .agent({ id: 'a', model: 'm', plugins: [{ plugin, config: { limit: -1 } }] })
        .agent({ id: 'b', model: 'missing', tools: ['nope'] })
        .build();
    expect(build).toThrowError(LunationError);
    try {
      build();
    } catch (error) {
      expect(LunationError.hasCode(error, 'build-invalid')).toBe(true);
      const problems = (error as LunationError).details?.problems as string[];
      expect(problems).toEqual([
        expect.stringMatching(/Agent "a": plugin "limiter" has an invalid config at "limit": .*>0/),
        expect.stringMatching(/Agent "b": unknown model "missing"/),
        expect.stringMatching(/Agent "b": unknown tool "nope"/),
      ]);
    }
  });

  it('rejects duplicate registrations', () => {
    const key = defineStateKey<number>({ name: 'dup', schema: z.number(), initial: () => 0 });
    const other = defineStateKey<number>({ name: 'dup', schema: z.number(), initial: () => 0 });
    const plugin = definePlugin({
      name: 'dupe',
      register(registrar) {
        registrar.stateKey(key);
        registrar.stateKey(other);
      },
    });
    expect(() =>
      createRuntime()
        .model('m', new ScriptedModel([]))
        .agent({ id: 'a', model: 'm', plugins: [plugin] })
        .build(),
    ).toThrow(/State key "dup" is registered twice/);
  });
});
