import { type AgentEvent, LunationError } from '@lunation/contract';
import { z } from 'zod';
import type { AgentDefinition } from '../agent.js';
import { type AnyTool, defineTool } from '../tool.js';
import type { LiveRuns } from './live-runs.js';
import type { RunHandle, RunOptions } from './run-options.js';

/**
 * The tool that runs a delegate agent as a child run (on a thread of its own, named after the parent's thread
 * and call) and returns its final answer; the child's events also reach the parent run's listeners.
 */
export function delegateTool(
  delegate: AgentDefinition,
  parent: AgentDefinition,
  runs: LiveRuns,
  start: (options: RunOptions) => Promise<RunHandle>,
): AnyTool {
  return defineTool({
    name: `agent_${delegate.id.replace(/[^a-zA-Z0-9_-]/g, '_')}`.slice(0, 64),
    description:
      delegate.description ??
      `Delegate a task to the "${delegate.id}" agent and get its final answer (from ${parent.id}).`,
    input: z.object({
      task: z.string().describe('What the delegate agent should do, with all needed context'),
    }),
    execute: async ({ task }, context) => {
      const parentRun = runs.byRun.get(context.identity.runId);
      const child = await start({
        threadId: `${context.identity.threadId}~${delegate.id}~${context.callId}`,
        agentId: delegate.id,
        input: task,
        signal: context.signal,
        stream: false,
        parent: { runId: context.identity.runId, toolCallId: context.toolCallId, origin: 'subagent' },
        ...(parentRun ? { onEvent: (event: AgentEvent) => parentRun.emit(event) } : {}),
      });
      const result = await child.result;
      if (result.termination.type === 'cancelled') {
        throw new LunationError('cancelled', `Delegate "${delegate.id}" was cancelled`);
      }
      if (result.status !== 'done' || result.termination.type === 'error') {
        return context.output({
          status: 'error',
          message: `Delegate "${delegate.id}" ended ${result.termination.type}${
            result.termination.type === 'error' ? `: ${result.termination.error.message}` : ''
          }`,
        });
      }
      return context.output({ status: 'success', message: result.finalText, data: result.finalText });
    },
  });
}
