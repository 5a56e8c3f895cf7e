import type { ResumeDecision } from '@lunation/contract';
import type { AgentRuntime, RunHandle } from '@lunation/runtime';
import { HttpError } from './http-error.js';
import { sendEventStream, sendJson } from './http-io.js';
import type { FrontRequest, RunFront } from './run-front.js';

/** Runs in this process: each request's run streams to that request, and a shutdown cancels what runs. */
export class LocalFront implements RunFront {
  private closing = false;

  constructor(
    private readonly runtime: AgentRuntime,
    private readonly heartbeatMs: number,
  ) {}

  async send({ response, threadId, resource }: FrontRequest, text: string): Promise<void> {
    const run = await this.runtime.run({ threadId, input: text, resourceId: resource });
    await this.stream(response, run);
  }

  async decide({ response, threadId, resource }: FrontRequest, decisions: ResumeDecision[]): Promise<void> {
    const outcome = await this.runtime.sendDecisions(threadId, decisions, { resourceId: resource });
    if (outcome.run) {
      await this.stream(response, outcome.run);
      return;
    }
    const { applied, ignored, openTickets } = outcome;
    sendJson(response, 200, { applied, ignored, openTickets });
  }

  async cancel({ response, threadId }: FrontRequest): Promise<void> {
    sendJson(response, 200, { cancelled: this.runtime.cancel(threadId, 'cancelled by the client') });
  }

  async follow(): Promise<void> {
    throw new HttpError(
      404,
      'not-found',
      "A run's events stream with the request that started it; following a run again needs a fleet (serve --dispatch)",
    );
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.runtime.cancelAll('the server is shutting down');
  }

  private async stream(response: FrontRequest['response'], run: RunHandle): Promise<void> {
    if (this.closing) run.cancel('the server is shutting down');
    await sendEventStream(response, run.events, this.heartbeatMs);
  }
}
