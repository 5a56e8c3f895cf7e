import type { Instrumentation, RunInstrumentation, RunStartFact } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

/** An instrumentation that writes down every call it gets, in order. */
function recorder() {
  const log: string[] = [];
  const starts: RunStartFact[] = [];
  const instrumentation: Instrumentation = {
    runStarted(fact) {
      starts.push(fact);
      log.push(
        `run-start ${fact.identity.agentId} resumed=${fact.resumed} lease=${fact.lease?.token ?? '-'}`,
      );
      const run: RunInstrumentation = {
        modelCallStarted: (call) => {
          log.push(`model ${call.provider}/${call.model} step ${call.step}`);
          return { end: (outcome) => log.push(`model-end ${outcome.stopReason}`) };
        },
        toolCallStarted: (call) => {
          log.push(`tool ${call.toolName} ${call.idempotencyKey.startsWith(`${fact.identity.runId}:lc_`)}`);
          return { end: (outcome) => log.push(`tool-end ${outcome.status}`) };
        },
        checkpointStarted: (kind) => {
          log.push(`checkpoint ${kind}`);
          return {
            end: (outcome) => log.push(`checkpoint-end ${outcome.messages}/${outcome.ledgerEntries}`),
          };
        },
        ledgerHit: (hit) => log.push(`ledger-hit ${hit.toolName}`),
        toolCallSuspended: (ticket) => log.push(`suspended ${ticket.toolName}`),
        toolCallResumed: (_, decision) => log.push(`resumed ${decision.action}`),
        lease: (lease) => log.push(`lease ${lease.type}`),
        suspendContext: () => ({ traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` }),
        runEnded: (end) => log.push(`run-end ${end.status} ${end.termination.type}`),
      };
      return run;
    },
  };
  return { instrumentation, log, starts };
}

function readTool(reads: string[]) {
  return defineTool({
    name: 'read_file',
    description: 'Reads a file',
    input: z.object({ path: z.string() }),
    execute: ({ path }) => {
      reads.push(path);
      return `contents of ${path}`;
    },
  });
}

describe('instrumentation', () => {
  it('hears of every model call, tool execution and checkpoint, and hands a suspended run its carrier back on resume', async () => {
    const store = new MemoryStore();
    const reads: string[] = [];
    const { instrumentation, log, starts } = recorder();
    const model = new ScriptedModel([
      callTool('read_file', { path: 'a.txt' }),
      callTool('read_file', { path: 'secret.txt' }),
      reply('done'),
    ]);
    const runtime = createRuntime()
      .model('m', model)
      .agent({
        id: 'a',
        model: 'm',
        tools: [readTool(reads)],
        plugins: [
          {
            plugin: permissionPlugin,
            config: { rules: [{ tool: 'read_file', arguments: { path: 'secret*' }, decision: 'ask' }] },
          },
        ],
      })
      .store(store)
      .instrumentation(instrumentation)
      .build();
    const waiting = await runtime.generate({ threadId: 't', input: 'read both' });
    expect(waiting.status).toBe('waiting');
    const ticketId = waiting.openTickets[0]?.id ?? '';
    const outcome = await runtime.sendDecisions('t', [{ decisionId: 'd1', ticketId, action: 'resume' }]);
    await outcome.run?.result;
    expect(reads).toEqual(['a.txt', 'secret.txt']);
    expect(log).toEqual([
      'run-start a resumed=false lease=1',
      'model scripted/scripted step 1',
      'model-end tool-use',
      'checkpoint C1',
      'checkpoint-end 2/1',
      'tool read_file true',
      'tool-end succeeded',
      'checkpoint C2',
      'checkpoint-end 1/1',
      'model scripted/scripted step 2',
      'model-end tool-use',
      'checkpoint C1',
      'checkpoint-end 1/0',
      'suspended read_file',
      'checkpoint run-end',
      'checkpoint-end 0/0',
      'run-end waiting suspended',
      `run-start a resumed=true lease=${starts[1]?.lease?.token}`,
      'resumed resume',
      'checkpoint C0',
      // The approved call's in-flight ledger entry rides in C0.
      'checkpoint-end 0/1',
      'tool read_file true',
      'tool-end succeeded',
      'checkpoint C2',
      'checkpoint-end 1/1',
      'model scripted/scripted step 3',
      'model-end end-turn',
      'checkpoint run-end',
      'checkpoint-end 1/0',
      'run-end done natural-end',
    ]);
    expect(starts[1]?.lease?.token).toBeGreaterThan(starts[0]?.lease?.token ?? 0);
    expect(starts[1]?.suspendedBy).toEqual({ traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01` });
    expect(starts[1]?.lease?.takeover).toBe(false);
  });

  it('leaves a run unobserved when runStarted throws, and the run goes on', async () => {
    const reads: string[] = [];
    const runtime = createRuntime()
      .model('m', new ScriptedModel([callTool('read_file', { path: 'a.txt' }), reply('done')]))
      .agent({ id: 'a', model: 'm', tools: [readTool(reads)] })
      .instrumentation({
        runStarted: () => {
          throw new Error('broken instrumentation');
        },
      })
      .build();
    const result = await runtime.generate({ threadId: 't', input: 'read' });
    expect(result.finalText).toBe('done');
    expect(reads).toEqual(['a.txt']);
  });
});
