import { type AgentEvent, LunationError, type Message, type ModelRequest } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { backgroundTasksPlugin, createRuntime, defineTool } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

const textOf = (message: Message | undefined) =>
  message?.content.map((part) => ('text' in part ? part.text : `[${part.type}]`)).join('') ?? '';
const texts = (request: ModelRequest | undefined) =>
  request?.messages.map((message) => `${message.role}:${textOf(message)}`) ?? [];

function gatedTool(name: string) {
  let release: () => void = () => {};
  const started = new Promise<void>((resolveStarted) => {
    (gatedTool as unknown as Record<string, unknown>)[name] = resolveStarted;
  });
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tool = defineTool({
    name,
    description: name,
    input: z.object({}),
    execute: async () => {
      ((gatedTool as unknown as Record<string, unknown>)[name] as () => void)();
      await gate;
      return 'tool done';
    },
  });
  return { tool, started, release: () => release() };
}

describe('follow-up input to a live run', () => {
  for (const mode of ['queue', 'steer'] as const) {
    it(`${mode}: delivers the message at the next step boundary, before the next model call`, async () => {
      const { tool, started, release } = gatedTool(`work_${mode}`);
      const model = new ScriptedModel([callTool(`work_${mode}`, {}), reply('noted both')]);
      const runtime = createRuntime()
        .model('m', model)
        .agent({ id: 'a', model: 'm', tools: [tool] })
        .build();
      const handle = await runtime.run({ threadId: 't', input: 'start' });
      await started;
      expect(await runtime.sendMessages('t', 'also do this', mode)).toBeUndefined();
      release();
      const result = await handle.result;
      expect(result.finalText).toBe('noted both');
      expect(model.callCount).toBe(2);
      const second = texts(model.requests[1]);
      if (mode === 'queue') {
        expect(second).toEqual([
          'user:start',
          'assistant:[tool-call]',
          'tool:[tool-result]',
          'user:also do this',
        ]);
      } else {
        expect(second.slice(0, 3)).toEqual(['user:start', 'assistant:[tool-call]', 'tool:[tool-result]']);
        expect(second[3]).toMatch(/^user:\[The user interjected/);
        expect(second[4]).toBe('user:also do this');
      }
    });
  }

  it('interrupt: cancels the in-flight model call and continues with the new input', async () => {
    let signalled: (() => void) | undefined;
    const streaming = new Promise<void>((resolve) => {
      signalled = resolve;
    });
    const model = new ScriptedModel(
      (_request, index) =>
        index === 0
          ? { text: 'a long answer that will be cut off by the user', delayMs: 0 }
          : reply('answering the new question'),
      { textChunkSize: 3, partDelayMs: 15 },
    );
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const handle = await runtime.run({ threadId: 't', input: 'first question' });
    const seen: AgentEvent[] = [];
    const consume = (async () => {
      for await (const event of handle.events) {
        seen.push(event);
        if (event.type === 'text-delta' && seen.filter((entry) => entry.type === 'text-delta').length === 2)
          signalled?.();
      }
    })();
    await streaming;
    await runtime.sendMessages(handle.runId, 'actually, a different question', 'interrupt');
    const result = await handle.result;
    await consume;
    expect(result.termination).toEqual({ type: 'natural-end' });
    expect(result.finalText).toBe('answering the new question');
    expect(texts(model.requests[1])).toEqual(['user:first question', 'user:actually, a different question']);
    expect(result.messages.map((message) => message.role)).toEqual(['user', 'user', 'assistant']);
  });

  it('starts a run when the thread is idle, and ask() returns the final text', async () => {
    const model = new ScriptedModel([reply('hello there'), reply('second answer')]);
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const handle = await runtime.sendMessages('idle', 'hi');
    expect((await handle?.result)?.finalText).toBe('hello there');
    expect(await runtime.ask('idle', 'and again?')).toBe('second answer');
    expect(texts(model.requests[1])).toEqual(['user:hi', 'assistant:hello there', 'user:and again?']);
  });

  it('keeps one run open for a sequence of inputs in a session', async () => {
    const model = new ScriptedModel((request) => reply(`echo ${textOf(request.messages.at(-1))}`));
    const runtime = createRuntime().model('m', model).agent({ id: 'a', model: 'm' }).build();
    const session = runtime.session('s');
    expect(await session.send('one')).toBe('echo one');
    expect(await session.send('two')).toBe('echo two');
    expect(runtime.activeRun('s')).toBeDefined();
    const result = await session.close();
    expect(result?.termination).toEqual({ type: 'natural-end' });
    expect(result?.steps).toBe(2);
    expect(runtime.activeRun('s')).toBeUndefined();
    expect(texts(model.requests[1])).toEqual(['user:one', 'assistant:echo one', 'user:two']);
  });
});

describe('background tasks', () => {
  function taskRuntime(
    model: ScriptedModel,
    jobMs: number,
    extra: Array<ReturnType<typeof defineTool>> = [],
  ) {
    const startJob = defineTool({
      name: 'start_job',
      description: 'Starts a long job in the background',
      input: z.object({}),
      execute: (_, context) => {
        const id = context.background.spawn('report', async (signal) => {
          await new Promise((resolve, reject) => {
            const timer = setTimeout(resolve, jobMs);
            signal.addEventListener('abort', () => {
              clearTimeout(timer);
              reject(new Error('aborted'));
            });
          });
          return { pages: 12 };
        });
        return { started: id };
      },
    });
    const ends: AgentEvent[] = [];
    let runtimeRef: ReturnType<ReturnType<typeof createRuntime>['build']> | undefined;
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [startJob, ...extra],
        plugins: [backgroundTasksPlugin(() => runtimeRef!.tasks)],
      })
      .sink({ emit: (event) => void (event.type === 'run-end' && ends.push(event)) })
      .build();
    runtimeRef = runtime;
    return { runtime, ends };
  }

  it('delivers a task result finishing after its tool returned at the next step', async () => {
    const wait = defineTool({
      name: 'wait_a_bit',
      description: 'waits',
      input: z.object({}),
      execute: () => new Promise((resolve) => setTimeout(() => resolve('waited'), 120)),
    });
    const model = new ScriptedModel([
      callTool('start_job', {}),
      callTool('wait_a_bit', {}),
      reply('The report has 12 pages.'),
    ]);
    const { runtime } = taskRuntime(model, 30, [wait]);
    const result = await runtime.generate({ threadId: 't', input: 'make a report' });
    expect(result.finalText).toBe('The report has 12 pages.');
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toEqual([
      'start_job',
      'wait_a_bit',
      'list_tasks',
      'cancel_task',
    ]);
    const third = texts(model.requests[2]);
    expect(third.at(-1)).toMatch(/^user:\[background task "report" \(.+\) completed\]\n\{"pages":12\}$/);
  });

  it('ends a run with pending tasks as waiting, then continues it automatically when they finish', async () => {
    const model = new ScriptedModel([
      callTool('start_job', {}),
      reply('Working on it.'),
      reply('Done: 12 pages.'),
    ]);
    const { runtime, ends } = taskRuntime(model, 60);
    const first = await runtime.generate({ threadId: 't', input: 'make a report' });
    expect(first.status).toBe('waiting');
    expect(first.termination).toEqual({ type: 'awaiting-tasks' });
    expect(first.finalText).toBe('Working on it.');
    const deadline = Date.now() + 5_000;
    while (ends.length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const continuation = ends[1] as Extract<AgentEvent, { type: 'run-end' }>;
    expect(continuation).toMatchObject({
      status: 'done',
      termination: { type: 'natural-end' },
      finalText: 'Done: 12 pages.',
    });
    expect(continuation.identity.runId).toBe(first.identity.runId);
    expect(texts(model.requests[2]).at(-1)).toMatch(/background task "report" .* completed/);
  });

  it('keeps a task result that finishes while the thread waits for a decision, for the resumed run', async () => {
    const deploy = defineTool({
      name: 'deploy',
      description: 'deploys, after approval',
      input: z.object({}),
      execute: (_, context) => (context.decision ? 'deployed' : context.suspend({ message: 'Deploy?' })),
    });
    const model = new ScriptedModel([
      callTool('start_job', {}),
      callTool('deploy', {}),
      reply('Deployed; the report has 12 pages.'),
    ]);
    const { runtime } = taskRuntime(model, 30, [deploy]);
    const first = await runtime.generate({ threadId: 't', input: 'report, then deploy' });
    expect(first.status).toBe('waiting');
    const ticket = first.openTickets[0];
    expect(ticket).toBeDefined();
    // The job finishes while the thread waits: the continuation it starts is refused (a ticket is open), and the
    // result must wait for the run that the decision resumes.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const outcome = await runtime.sendDecisions('t', [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume' },
    ]);
    const resumed = await outcome.run?.result;
    expect(resumed?.finalText).toBe('Deployed; the report has 12 pages.');
    expect(texts(model.requests[2]).some((line) => /background task "report" .* completed/.test(line))).toBe(
      true,
    );
  });

  it('lets the model list and cancel tasks', async () => {
    const model = new ScriptedModel((request, index) => {
      if (index === 0) return callTool('start_job', {});
      if (index === 1) return callTool('list_tasks', {});
      if (index === 2) {
        const listed = request.messages.at(-1)?.content[0];
        const id =
          listed && listed.type === 'tool-result' ? (listed.result.data as Array<{ id: string }>)[0]?.id : '';
        return callTool('cancel_task', { taskId: id });
      }
      return reply('cancelled it');
    });
    const { runtime } = taskRuntime(model, 60_000);
    const result = await runtime.generate({ threadId: 't', input: 'start then cancel' });
    const listed = model.requests[2]?.messages.at(-1)?.content[0];
    expect(listed && listed.type === 'tool-result' && listed.result.data).toEqual([
      expect.objectContaining({ name: 'report', status: 'running' }),
    ]);
    // The cancellation reaches the model as a task result, in this run or in its automatic continuation.
    expect(result.termination.type).toMatch(/natural-end|awaiting-tasks/);
    const cancelledSeen = () =>
      model.requests.some((request) =>
        texts(request).some((line) => /background task "report" .* cancelled/.test(line)),
      );
    const deadline = Date.now() + 2_000;
    while (!cancelledSeen() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(cancelledSeen()).toBe(true);
  });
});

describe('agent registry hot swap', () => {
  it('keeps an active run on its version, gives new runs the newest, and rejects an invalid set unchanged', async () => {
    const slow = new ScriptedModel([{ text: 'old answer', delayMs: 80 }]);
    const fresh = new ScriptedModel([reply('new answer')]);
    const runtime = createRuntime()
      .model('m', slow)
      .agent({ id: 'a', model: 'm', systemPrompt: 'v1' })
      .build();
    expect(runtime.registry.version).toBe(1);
    const active = await runtime.run({ threadId: 't1', input: 'hi' });
    const next = runtime.registry.update((set) => ({
      ...set,
      models: { m: fresh },
      agents: [{ id: 'a', model: 'm', systemPrompt: 'v2' }],
    }));
    expect(next.version).toBe(2);
    const invalid = () =>
      runtime.registry.update((set) => ({
        ...set,
        agents: [
          { id: 'a', model: 'missing' },
          { id: 'b', model: 'nope' },
        ],
      }));
    expect(invalid).toThrowError(/2 problems/);
    try {
      invalid();
    } catch (error) {
      expect(LunationError.hasCode(error, 'build-invalid')).toBe(true);
    }
    expect(runtime.registry.version).toBe(2);
    const newer = await runtime.generate({ threadId: 't2', input: 'hi' });
    expect(newer.finalText).toBe('new answer');
    expect(fresh.requests[0]?.messages[0]?.content).toEqual([{ type: 'text', text: 'v2' }]);
    const old = await active.result;
    expect(old.finalText).toBe('old answer');
    expect(slow.requests[0]?.messages[0]?.content).toEqual([{ type: 'text', text: 'v1' }]);
  });
});

describe('tool-error policy', () => {
  function flaky(failures: number, retryable: boolean) {
    let calls = 0;
    const tool = defineTool({
      name: 'flaky',
      description: 'fails a few times',
      input: z.object({}),
      execute: () => {
        calls++;
        if (calls <= failures) throw new LunationError('provider-error', `failure ${calls}`, { retryable });
        return `ok after ${calls}`;
      },
    });
    return { tool, calls: () => calls };
  }

  it('continue (default): the model sees the error', async () => {
    const { tool, calls } = flaky(1, true);
    const model = new ScriptedModel([callTool('flaky', {}), reply('saw the error')]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [tool] })
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result.finalText).toBe('saw the error');
    expect(calls()).toBe(1);
    expect(model.requests[1]?.messages.at(-1)?.content[0]).toMatchObject({
      result: { status: 'error', message: 'Tool "flaky" failed: failure 1' },
    });
  });

  it('retry: retries retryable errors with backoff up to the limit, and not others', async () => {
    const { tool, calls } = flaky(2, true);
    const model = new ScriptedModel([callTool('flaky', {}), reply('worked')]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [tool],
        toolErrorPolicy: { policy: 'retry', maxRetries: 3, backoffMs: 1 },
      })
      .build();
    await runtime.generate({ threadId: 't', input: 'go' });
    expect(calls()).toBe(3);
    expect(model.requests[1]?.messages.at(-1)?.content[0]).toMatchObject({
      result: { status: 'success', data: 'ok after 3' },
    });

    const permanent = flaky(5, false);
    const model2 = new ScriptedModel([callTool('flaky', {}), reply('gave up')]);
    const runtime2 = createRuntime()
      .model('m', model2)
      .agent({
        id: 'a',
        model: 'm',
        tools: [permanent.tool],
        toolErrorPolicy: { policy: 'retry', maxRetries: 3, backoffMs: 1 },
      })
      .build();
    await runtime2.generate({ threadId: 't', input: 'go' });
    expect(permanent.calls()).toBe(1);

    const exhausted = flaky(10, true);
    const model3 = new ScriptedModel([callTool('flaky', {}), reply('gave up')]);
    const runtime3 = createRuntime()
      .model('m', model3)
      .agent({
        id: 'a',
        model: 'm',
        tools: [exhausted.tool],
        toolErrorPolicy: { policy: 'retry', maxRetries: 2, backoffMs: 1 },
      })
      .build();
    await runtime3.generate({ threadId: 't', input: 'go' });
    expect(exhausted.calls()).toBe(3);
  });

  it('stop: ends the run stopped with code tool-error, per tool', async () => {
    const { tool } = flaky(1, false);
    const safe = defineTool({
      name: 'safe',
      description: 'fails harmlessly',
      input: z.object({}),
      execute: () => {
        throw new Error('meh');
      },
    });
    const model = new ScriptedModel([callTool('safe', {}), callTool('flaky', {}), reply('never')]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({ id: 'a', model: 'm', tools: [tool, safe], toolErrorPolicies: { flaky: { policy: 'stop' } } })
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'go' });
    expect(result.termination).toMatchObject({
      type: 'stopped',
      code: 'tool-error',
      detail: 'flaky: Tool "flaky" failed: failure 1',
    });
    expect(result.steps).toBe(2);
    expect(model.callCount).toBe(2);
    expect(result.messages.at(-1)?.role).toBe('tool');
  });
});
