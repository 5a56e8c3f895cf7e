import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRuntime, defineTool, permissionPlugin } from '@lunation/runtime';
import { callTool, reply, ScriptedModel } from '@lunation/runtime/testing';
import { SqliteStore } from '@lunation/store-sqlite';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { openTelemetryInstrumentation } from './index.js';

const directory = mkdtempSync(join(tmpdir(), 'lunation-otel-'));
afterAll(() => rmSync(directory, { recursive: true, force: true }));

/** The attributes that hold message contents. */
const CONTENT_ATTRIBUTES = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.system_instructions',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
];

/** A tracer provider that keeps every finished span in memory: one per simulated process. */
function memoryTracing() {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return { exporter, tracerProvider };
}

/** The spans as an indented tree of names, children in start order. */
function tree(spans: readonly ReadableSpan[]): string[] {
  const ids = new Set(spans.map((span) => span.spanContext().spanId));
  const byStart = [...spans].sort((a, b) => compareTime(a.startTime, b.startTime));
  const lines: string[] = [];
  const walk = (parentId: string | undefined, depth: number) => {
    for (const span of byStart) {
      const parent = span.parentSpanContext?.spanId;
      const isChild = parentId === undefined ? parent === undefined || !ids.has(parent) : parent === parentId;
      if (!isChild) continue;
      lines.push(`${'  '.repeat(depth)}${span.name}`);
      walk(span.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines;
}

function compareTime(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}

function only(spans: readonly ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((span) => span.name === name);
  expect(found.map((span) => span.name)).toEqual([name]);
  return found[0] as ReadableSpan;
}

function assistant(store: SqliteStore, tracerProvider: TracerProvider, boss: ScriptedModel, reads: string[]) {
  const readFile = defineTool({
    name: 'read_file',
    description: 'Reads a file',
    input: z.object({ path: z.string() }),
    execute: ({ path }) => {
      reads.push(path);
      return `contents of ${path}`;
    },
  });
  return createRuntime()
    .model('boss-model', boss)
    .model(
      'researcher-model',
      new ScriptedModel([reply('Paris', { usage: { inputTokens: 7, outputTokens: 1 } })]),
    )
    .agent({
      id: 'boss',
      model: 'boss-model',
      systemPrompt: 'You lead.',
      delegates: ['researcher'],
      tools: [readFile],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'read_*', decision: 'ask' }] } }],
    })
    .agent({ id: 'researcher', model: 'researcher-model', description: 'Finds facts.' })
    .store(store)
    .instrumentation(openTelemetryInstrumentation({ tracerProvider, checkpoints: 'spans' }))
    .build();
}

describe('the span tree of a run', () => {
  it('nests a delegated child under its tool call, and links a resume in a second runtime to the suspended run', async () => {
    const path = join(directory, 'resume.db');
    const reads: string[] = [];

    // Process 1: delegate to the researcher, then ask to read a file (suspends for approval).
    const first = memoryTracing();
    const store1 = await SqliteStore.open({ path });
    const model1 = new ScriptedModel([
      callTool(
        'agent_researcher',
        { task: 'capital of France?' },
        { usage: { inputTokens: 10, outputTokens: 3 } },
      ),
      callTool('read_file', { path: 'notes.txt' }),
    ]);
    const runtime1 = assistant(store1, first.tracerProvider, model1, reads);
    const suspended = await runtime1.generate({
      threadId: 't1',
      agentId: 'boss',
      input: 'research, then read',
    });
    expect(suspended.status).toBe('waiting');
    const ticket = suspended.openTickets[0];
    expect(ticket?.toolName).toBe('read_file');
    await store1.close();

    await first.tracerProvider.forceFlush();
    const spans1 = first.exporter.getFinishedSpans();
    expect(tree(spans1)).toEqual([
      'invoke_agent boss',
      '  chat scripted',
      '  lunation.checkpoint C1',
      '  execute_tool agent_researcher',
      '    invoke_agent researcher',
      '      chat scripted',
      '      lunation.checkpoint run-end',
      '  lunation.checkpoint C2',
      '  chat scripted',
      '  lunation.checkpoint C1',
      '  lunation.checkpoint run-end',
    ]);
    const boss1 = only(spans1, 'invoke_agent boss');
    expect(boss1.kind).toBe(SpanKind.INTERNAL);
    expect(boss1.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'boss',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted',
      'gen_ai.conversation.id': 't1',
      'lunation.run.id': suspended.identity.runId,
      'lunation.run.resumed': false,
      'lunation.run.status': 'waiting',
      'lunation.run.termination': 'suspended',
      'lunation.run.steps': 2,
      'gen_ai.usage.input_tokens': suspended.usage.inputTokens,
    });
    expect(boss1.events.map((event) => event.name)).toEqual([
      'lunation.lease.acquire',
      'lunation.run.suspend',
    ]);
    expect(boss1.events[0]?.attributes).toMatchObject({ 'lunation.lease.takeover': false });
    expect(boss1.events[1]?.attributes).toMatchObject({
      'gen_ai.tool.name': 'read_file',
      'lunation.ticket.id': ticket?.id,
      'lunation.ticket.action': 'approve',
    });

    const chats = spans1.filter(
      (span) =>
        span.name === 'chat scripted' && span.parentSpanContext?.spanId === boss1.spanContext().spanId,
    );
    expect(chats.map((span) => span.kind)).toEqual([SpanKind.CLIENT, SpanKind.CLIENT]);
    const firstChat = chats.sort((a, b) => compareTime(a.startTime, b.startTime))[0];
    expect(firstChat?.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.request.model': 'scripted',
      'gen_ai.conversation.id': 't1',
      'gen_ai.response.finish_reasons': ['tool_call'],
      'gen_ai.usage.input_tokens': 10,
      'gen_ai.usage.output_tokens': 3,
    });
    // Message contents are off by default.
    for (const span of spans1) {
      expect(Object.keys(span.attributes).filter((key) => CONTENT_ATTRIBUTES.includes(key))).toEqual([]);
    }

    const delegate = only(spans1, 'execute_tool agent_researcher');
    expect(delegate.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'agent_researcher',
      'gen_ai.tool.call.id': 'call_1_1',
      'gen_ai.tool.type': 'function',
      'lunation.tool.idempotency_key': expect.stringMatching(new RegExp(`^${suspended.identity.runId}:lc_`)),
      'lunation.tool.status': 'succeeded',
    });
    expect(delegate.attributes['lunation.tool.rerun']).toBeUndefined();
    const child = only(spans1, 'invoke_agent researcher');
    expect(child.parentSpanContext?.spanId).toBe(delegate.spanContext().spanId);
    expect(child.spanContext().traceId).toBe(boss1.spanContext().traceId);
    expect(child.attributes).toMatchObject({
      'gen_ai.agent.description': 'Finds facts.',
      'gen_ai.conversation.id': expect.stringMatching(/^t1~researcher~lc_/),
      'lunation.run.origin': 'subagent',
      'lunation.run.parent_id': suspended.identity.runId,
      'lunation.run.status': 'done',
      'lunation.run.termination': 'natural-end',
    });
    const checkpoints = spans1
      .filter(
        (span) =>
          span.name.startsWith('lunation.checkpoint') &&
          span.parentSpanContext?.spanId === boss1.spanContext().spanId,
      )
      .sort((a, b) => compareTime(a.startTime, b.startTime))
      .map((span) => span.attributes);
    expect(checkpoints).toEqual([
      // C1: the assistant message and the delegate call's in-flight ledger entry.
      {
        'lunation.checkpoint.kind': 'C1',
        'lunation.checkpoint.messages': 2,
        'lunation.checkpoint.ledger_entries': 1,
        'lunation.checkpoint.run_record': true,
      },
      // C2: the tool message, the completion riding along.
      {
        'lunation.checkpoint.kind': 'C2',
        'lunation.checkpoint.messages': 1,
        'lunation.checkpoint.ledger_entries': 1,
        'lunation.checkpoint.run_record': true,
      },
      // C1 of the gated call: the assistant message and its ticket; nothing starts.
      {
        'lunation.checkpoint.kind': 'C1',
        'lunation.checkpoint.messages': 1,
        'lunation.checkpoint.ledger_entries': 0,
        'lunation.checkpoint.run_record': true,
      },
      {
        'lunation.checkpoint.kind': 'run-end',
        'lunation.checkpoint.messages': 0,
        'lunation.checkpoint.ledger_entries': 0,
        'lunation.checkpoint.run_record': true,
      },
    ]);

    // Process 2: a fresh runtime, store and tracer provider on the same file approves and finishes the run.
    const second = memoryTracing();
    const store2 = await SqliteStore.open({ path });
    const model2 = new ScriptedModel([reply('The notes say hello.')]);
    const runtime2 = assistant(store2, second.tracerProvider, model2, reads);
    const outcome = await runtime2.sendDecisions('t1', [
      { decisionId: 'd1', ticketId: ticket?.id ?? '', action: 'resume' },
    ]);
    const done = await outcome.run?.result;
    expect(done?.finalText).toBe('The notes say hello.');
    expect(reads).toEqual(['notes.txt']);
    await store2.close();

    await second.tracerProvider.forceFlush();
    const spans2 = second.exporter.getFinishedSpans();
    expect(tree(spans2)).toEqual([
      'invoke_agent boss',
      '  lunation.checkpoint C0',
      '  execute_tool read_file',
      '  lunation.checkpoint C2',
      '  chat scripted',
      '  lunation.checkpoint run-end',
    ]);
    const boss2 = only(spans2, 'invoke_agent boss');
    // A new trace that links to the run that suspended.
    expect(boss2.parentSpanContext).toBeUndefined();
    expect(boss2.links).toHaveLength(1);
    expect(boss2.links[0]?.context).toMatchObject({
      traceId: boss1.spanContext().traceId,
      spanId: boss1.spanContext().spanId,
    });
    expect(boss2.links[0]?.attributes).toEqual({ 'lunation.link.type': 'resumes' });
    expect(boss2.attributes).toMatchObject({
      'lunation.run.id': suspended.identity.runId,
      'lunation.run.resumed': true,
      'lunation.run.status': 'done',
      'lunation.run.termination': 'natural-end',
      'lunation.run.steps': 3,
    });
    expect(boss2.events.map((event) => event.name)).toEqual([
      'lunation.lease.acquire',
      'lunation.run.resume',
    ]);
    expect(boss2.events[1]?.attributes).toMatchObject({
      'gen_ai.tool.call.id': ticket?.toolCallId,
      'lunation.ticket.id': ticket?.id,
      'lunation.decision.action': 'resume',
    });
    expect(only(spans2, 'execute_tool read_file').attributes).toMatchObject({
      'gen_ai.tool.call.id': ticket?.toolCallId,
      'lunation.tool.status': 'succeeded',
    });
    expect(only(spans2, 'execute_tool read_file').status.code).toBe(SpanStatusCode.UNSET);
  });
});
