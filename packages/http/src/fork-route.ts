import { jsonObjectSchema } from '@lunation/contract';
import { forkThread, listCheckpoints } from '@lunation/runtime/internal';
import { z } from 'zod';
import type { ApiParts, RouteContext } from './api-parts.js';
import type { RunStream } from './front.js';
import { HttpError, jsonResponse } from './http-error.js';
import { readBody } from './request-body.js';

const forkBodySchema = z
  .object({
    checkpoint: z.number().int().min(0),
    input: z.string().min(1).optional(),
    metadata: jsonObjectSchema.optional(),
    openCalls: z.enum(['settle', 'rerun']).optional(),
    continue: z.boolean().optional(),
  })
  .strict()
  .refine((body) => !(body.continue === true && body.input !== undefined), {
    message: 'either continue the run (continue: true) or send input, not both',
    path: ['continue'],
  });

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
 * changed; no recorded side effect of it runs again unless `openCalls: 'rerun'` asks); with `input`, the fork's
 * first run starts with it and runs on; with `continue: true`, the fork's first run continues the checkpoint's run
 * (the model called again on the copied history). Follow either at `/threads/:forkId/runs/:runId/events` or
 * `/chat/:forkId/stream`.
 */
export async function forkRoute(
  parts: ApiParts,
  { request, params, resource }: RouteContext,
): Promise<Response> {
  const body = await readBody(forkBodySchema, request, parts.bodyLimits);
  const original = await parts.ownThread(params[0]!, resource);
  const continueRun = body.continue === true;
  const front = parts.front;
  if (continueRun && !front.continueRun) {
    throw new HttpError(
      400,
      'invalid-argument',
      "This server's front cannot continue a run: fork without continue and send input instead",
    );
  }
  const fork = await forkThread(parts.store, original.id, {
    checkpoint: body.checkpoint,
    resourceId: resource,
    ...(body.metadata ? { metadata: body.metadata } : {}),
    ...(body.openCalls ? { openCalls: body.openCalls } : {}),
    continueRun,
  });
  const forkRequest = { threadId: fork.thread.id, resource };
  let stream: RunStream | undefined;
  if (body.input !== undefined) stream = await front.send(forkRequest, body.input);
  else if (fork.runId !== undefined) stream = await front.continueRun!(forkRequest, fork.runId);
  if (stream) letGo(stream);
  return jsonResponse(201, {
    threadId: fork.thread.id,
    thread: fork.thread,
    checkpoint: fork.checkpoint ?? null,
    messageCount: fork.messageCount,
    settled: fork.settled,
    rerun: fork.rerun,
    runId: stream?.runId ?? fork.runId ?? null,
  });
}

/**
 * Nobody reads a fork's first run here: the run goes on, and its events are followed by id. Detached, the reader
 * ends at its first read (and lets go of what it holds).
 */
function letGo(stream: RunStream): void {
  stream.detach();
  const reader = stream.records[Symbol.asyncIterator]();
  void reader
    .next()
    .then(() => reader.return?.())
    .catch(() => undefined);
}
