/** Opens a BullMQDispatcher on the test Redis: the conformance kit's worker processes load this module. */
import type { DispatchPolicy } from '@lunation/contract';
import { BullMQDispatcher } from '../bullmq-dispatcher.js';
import { redisUrl } from './redis-test-server.js';

/** Short checks, so that the kit's lost claims come back quickly. */
export const testSettings = { stalledIntervalMs: 100, blockMs: 200, resourceRetryMs: 100 };

/** What names a test's backend: its key prefix. */
export interface TestBackend {
  keyPrefix: string;
  /** A deliberately broken dispatcher's settings (see `broken-dispatcher.conformance.ts`). */
  settings?: Partial<typeof testSettings>;
}

/** A dispatcher on the test Redis under `backend`'s key prefix, with `policy`. */
export async function openDispatcher(
  backend: TestBackend,
  policy: DispatchPolicy,
): Promise<BullMQDispatcher> {
  return new BullMQDispatcher({
    ...policy,
    ...testSettings,
    ...backend.settings,
    url: redisUrl,
    keyPrefix: backend.keyPrefix,
  });
}
