import { type CheckpointCommit, type CheckpointResult, LunationError } from '@lunation/contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MemoryStore } from '../../../store-memory/src/index.js';
import { createRuntime, defineTool, permissionPlugin } from '../../src/index.js';
import { reply, ScriptedModel } from '../../src/testing/index.js';

/** A store whose next commit ending a superseded run is lost before it applies (`store-unavailable`). */
class LosesSupersede extends MemoryStore {
  lost = 0;
  override async commit(commit: CheckpointCommit): Promise<CheckpointResult> {
    const superseding = commit.run?.termination?.type === 'cancelled' && commit.run.identity.runId === 'r1';
    if (superseding && this.lost === 0) {
      this.lost++;
      throw new LunationError('store-unavailable', 'the commit was lost before it applied', {
        retryable: true,
      });
    }
    return super.commit(commit);
  }
}

// Found by the simulator (runtime world, every fault: seeds 111 and 208). New input for a thread whose run waits
// for an approval supersedes that run in one commit (C0: its open calls answered, it ends cancelled). When that
// commit failed, the new run's error ending committed the answers without ending the waiting run: it stayed
// `waiting` with its ticket, behind a later run, so no decision could ever reach it (stranded).
describe('new input superseding a waiting run, when the superseding commit fails', () => {
  it('never leaves the superseded run waiting behind a later run: it ends cancelled with the answers', async () => {
    const store = new LosesSupersede();
    const ran: string[] = [];
    const deploy = defineTool({
      name: 'deploy',
      description: 'deploys',
      input: z.object({}),
      execute: () => {
        ran.push('deploy');
        return 'deployed';
      },
    });
    const runtime = createRuntime()
      .model('m', new ScriptedModel([{ toolCalls: [{ toolName: 'deploy', arguments: {} }] }, reply('done')]))
      .agent({
        id: 'a',
        model: 'm',
        tools: [deploy],
        plugins: [{ plugin: permissionPlugin, config: { rules: [{ tool: 'deploy', decision: 'ask' }] } }],
      })
      .store(store)
      .build();
    const waiting = await (await runtime.run({ threadId: 't', runId: 'r1', input: 'deploy' })).result;
    expect(waiting.status).toBe('waiting');

    const next = await (await runtime.run({ threadId: 't', runId: 'r2', input: 'never mind' })).result;

    expect(store.lost).toBe(1);
    expect(next.status).toBe('done');
    expect(await store.getRun('r1')).toMatchObject({
      status: 'done',
      termination: { type: 'cancelled', reason: 'superseded by a new message' },
      openTickets: [],
    });
    expect((await store.getLatestRun('t'))?.identity.runId).toBe('r2');
    const roles = (await store.listMessages('t')).map((record) => record.message.role);
    expect(roles.slice(0, 3)).toEqual(['user', 'assistant', 'tool']);
    expect(ran).toEqual([]);
  });
});
