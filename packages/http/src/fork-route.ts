import { jsonObjectSchema } from '@lunation/contract';
import { forkThread, listCheckpoints } from '@lunation/runtime';
import { z } from 'zod';
import type { ApiParts, RouteContext } from './http-api.js';
import { jsonResponse } from './http-error.js';
import { readBody } from './request-body.js';

const forkBodySchema = z
  .object({
    checkpoint: z.number().int().min(0),
    input: z.string().min(1).optional(),
    metadata: jsonObjectSchema.optional(),
  })
  .strict();

/** `GET /threads/:threadId/checkpoints`: the thread's checkpoints, one per step, oldest first. */
export async function threadCheckpoints(
  parts: ApiParts,
  { params, resource }: RouteContext,
): Promise<Response> {
  const thread = await parts.ownThread(params[0]!, resource);
  return jsonResponse(200, { checkpoints: await listCheckpoints(parts.store, thread.id) });
}

/**
 * `POST /threads/:threadId/fork`: a new thread of the caller's from a checkpoint of this one (the original is not
 * changed; no recorded side effect of it runs again); with `input`, the fork's first run starts with it and runs on
 * (follow it at `/threads/:forkId/runs/:runId/events` or `/chat/:forkId/stream`).
 */
export async function forkRoute(
  parts: ApiParts,
  { request, params, resource }: RouteContext,
): Promise<Response> {
  const body = await readBody(forkBodySchema, request, parts.bodyLimits);
  const original = await parts.ownThread(params[0]!, resource);
  const fork = await forkThread(parts.store, original.id, {
    checkpoint: body.checkpoint,
    resourceId: resource,
    ...(body.metadata ? { metadata: body.metadata } : {}),
  });
  let runId: string | null = null;
  if (body.input !== undefined) {
    const stream = await parts.front.send({ threadId: fork.thread.id, resource }, body.input);
    // Nobody reads this stream: the run goes on, and its events are followed by id. Detached, the reader ends at
    // its first read (and lets go of what it holds).
    stream.detach();
    const reader = stream.records[Symbol.asyncIterator]();
    void reader
      .next()
      .then(() => reader.return?.())
      .catch(() => undefined);
    runId = stream.runId ?? null;
  }
  return jsonResponse(201, {
    threadId: fork.thread.id,
    thread: fork.thread,
    checkpoint: fork.checkpoint ?? null,
    messageCount: fork.messageCount,
    settled: fork.settled,
    runId,
  });
}
