import type { SeamCounts } from './seam-scan.js';

/**
 * The call sites of host time, timers and randomness that the Clock / IdSource wiring has not reached yet, counted
 * by file and rule. It may only shrink: `seams.test.ts` fails on a new site, and on a site removed without
 * shrinking this list (`pnpm --filter @lunation/simulation seams --write` rewrites it, refusing any growth).
 */
export const seamAllowList: SeamCounts = {
  'packages/dispatch-bullmq/src/bullmq-admin.ts': {
    'Date.now': 2,
  },
  'packages/dispatch-bullmq/src/bullmq-backend.ts': {
    clearInterval: 1,
    setInterval: 1,
  },
  'packages/dispatch-bullmq/src/bullmq-claims.ts': {
    'Date.now': 8,
  },
  'packages/dispatch-bullmq/src/bullmq-inbox.ts': {
    'Date.now': 2,
  },
  'packages/dispatch-bullmq/src/claim-gate.ts': {
    'Date.now': 1,
    clearTimeout: 1,
    randomUUID: 1,
    setTimeout: 2,
  },
  'packages/dispatch-bullmq/src/redis-cancels.ts': {
    'Date.now': 1,
    randomUUID: 1,
  },
  'packages/dispatch-bullmq/src/stream-waiter.ts': {
    setTimeout: 3,
  },
  'packages/dispatch-bullmq/src/with-timeout.ts': {
    clearTimeout: 2,
    setTimeout: 1,
  },
  'packages/dispatch-postgres/src/notification-hub.ts': {
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/dispatch-postgres/src/postgres-cancels.ts': {
    randomUUID: 1,
  },
  'packages/dispatch-postgres/src/postgres-claims.ts': {
    'Date.now': 2,
    setTimeout: 1,
  },
  'packages/dispatch-postgres/src/postgres-dispatch-backend.ts': {
    clearInterval: 1,
    setInterval: 1,
    setTimeout: 1,
  },
  'packages/dispatch-postgres/src/waker.ts': {
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/fleet/src/agent-worker.ts': {
    clearInterval: 1,
    clearTimeout: 3,
    setInterval: 1,
    setTimeout: 3,
  },
  'packages/fleet/src/event-pipe.ts': {
    'Date.now': 1,
    setTimeout: 1,
  },
  'packages/fleet/src/fleet-client.ts': {
    createId: 5,
  },
  'packages/fleet/src/local-cancels.ts': {
    createId: 1,
  },
  'packages/fleet/src/local-claim-waiters.ts': {
    'Date.now': 1,
    clearTimeout: 2,
    setTimeout: 1,
  },
  'packages/fleet/src/local-dispatch-operations.ts': {
    'Date.now': 12,
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/fleet/src/local-run-events.ts': {
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/fleet/src/local-work-queue.ts': {
    createId: 1,
  },
  'packages/fleet/src/log-repair.ts': {
    'Date.now': 1,
  },
  'packages/fleet/src/missing-events.ts': {
    'Date.now': 1,
  },
  'packages/store-memory/src/memory-store.ts': {
    'Date.now': 1,
  },
  'packages/store-postgres/src/postgres-backend.ts': {
    'Date.now': 5,
  },
  'packages/store-redis/src/redis-backend.ts': {
    'Date.now': 5,
  },
  'packages/store-sqlite/src/sqlite-backend.ts': {
    'Date.now': 10,
  },
};
