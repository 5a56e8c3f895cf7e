import { LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createRuntime, defineTool, permissionPlugin } from '../src/index.js';
import { callTool, reply, ScriptedModel } from '../src/testing/index.js';

const ping = defineTool({ name: 'ping', description: 'Pings', input: z.object({}), execute: () => 'pong' });

async function waitingRun() {
  const runtime = createRuntime()
    .model('m', new ScriptedModel([callTool('ping', {}), reply('Done.')]))
    .agent({
      id: 'a',
      model: 'm',
      tools: [ping],
      plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'ping', decision: 'ask' }] } }],
    })
    .build();
  const run = await runtime.run({ threadId: 't1', input: 'Ping' });
  const result = await run.result;
  expect(result.status).toBe('waiting');
  return { runtime, runId: run.runId, ticketId: result.openTickets[0]!.id };
}

describe('a decision with a wrong payload', () => {
  it('names the field and what it expects ({"always":"yes"})', async () => {
    const { runtime, runId, ticketId } = await waitingRun();
    const error = await runtime
      .sendDecisions(runId, [{ decisionId: 'd1', ticketId, action: 'resume', payload: { always: 'yes' } }])
      .catch((caught: unknown) => caught);
    expect(LunationError.isInstance(error)).toBe(true);
    expect((error as LunationError).code).toBe('decision-invalid');
    expect((error as LunationError).message).toBe(
      `Decision "d1": the payload does not match ticket "${ticketId}"'s response schema: always: Invalid input: expected boolean, received string`,
    );
    // Nothing was lost: the ticket is still open and a right payload resumes the run.
    const outcome = await runtime.sendDecisions(runId, [
      { decisionId: 'd2', ticketId, action: 'resume', payload: { always: true } },
    ]);
    expect(outcome.applied).toEqual(['d2']);
    expect((await outcome.run?.result)?.finalText).toBe('Done.');
  });

  it('says which types a payload of the wrong type could have been', async () => {
    const { runtime, runId, ticketId } = await waitingRun();
    const error = await runtime
      .sendDecisions(runId, [{ decisionId: 'd1', ticketId, action: 'resume', payload: 'always' }])
      .catch((caught: unknown) => caught);
    expect((error as LunationError).code).toBe('decision-invalid');
    expect((error as LunationError).message).toMatch(
      /response schema: \(payload\): expected one of: .*object.*null.*, received string$/,
    );
  });
});
