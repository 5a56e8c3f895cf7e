import type { SeamCounts } from './seam-scan.js';

/**
 * The call sites of host time, timers and randomness that the Clock / IdSource wiring has not reached yet, counted
 * by file and rule. It may only shrink: `seams.test.ts` fails on a new site, and on a site removed without
 * shrinking this list (`pnpm --filter @lunation/simulation seams --write` rewrites it, refusing any growth).
 */
export const seamAllowList: SeamCounts = {
  'packages/contract/src/postgres-utils/postgres-migrations.ts': {
    'new Date()': 1,
  },
  'packages/contract/src/provider-utils/provider-retry.ts': {
    'Date.now': 4,
    clearTimeout: 2,
    setTimeout: 2,
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
  'packages/runtime/src/cut-off-runs.ts': {
    'Date.now': 3,
    setTimeout: 1,
  },
  'packages/runtime/src/executor/reserve-run.ts': {
    createId: 1,
  },
  'packages/runtime/src/executor/run-options.ts': {
    createId: 1,
  },
  'packages/runtime/src/executor/settled-handle.ts': {
    'Date.now': 1,
    createId: 1,
  },
  'packages/runtime/src/executor/task-host.ts': {
    'Date.now': 3,
    createId: 2,
  },
  'packages/runtime/src/executor/thread-executor.ts': {
    randomUUID: 1,
  },
  'packages/runtime/src/id.ts': {
    randomUUID: 1,
  },
  'packages/runtime/src/loop/agent-loop.ts': {
    'Date.now': 4,
  },
  'packages/runtime/src/loop/checkpointer.ts': {
    'Date.now': 5,
  },
  'packages/runtime/src/loop/compaction.ts': {
    createId: 2,
  },
  'packages/runtime/src/loop/inbox.ts': {
    'Date.now': 1,
    createId: 2,
  },
  'packages/runtime/src/loop/inference.ts': {
    createId: 2,
  },
  'packages/runtime/src/loop/resume.ts': {
    createId: 1,
  },
  'packages/runtime/src/loop/run-deadline.ts': {
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/runtime/src/loop/run-end.ts': {
    'Date.now': 1,
  },
  'packages/runtime/src/loop/run-journal.ts': {
    'Date.now': 3,
  },
  'packages/runtime/src/loop/run-scope.ts': {
    'Date.now': 1,
  },
  'packages/runtime/src/loop/stop-conditions.ts': {
    'Date.now': 1,
  },
  'packages/runtime/src/loop/structured-output.ts': {
    createId: 1,
  },
  'packages/runtime/src/loop/tool-calls.ts': {
    createId: 1,
  },
  'packages/runtime/src/loop/tool-clock.ts': {
    'Date.now': 5,
    clearTimeout: 2,
    setTimeout: 1,
  },
  'packages/runtime/src/loop/tool-gate.ts': {
    createId: 1,
  },
  'packages/runtime/src/loop/tool-invoker.ts': {
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/runtime/src/persistence.ts': {
    'Date.now': 3,
  },
  'packages/runtime/src/testing/scripted-model.ts': {
    clearTimeout: 1,
    setTimeout: 1,
  },
  'packages/runtime/src/thread-lease.ts': {
    'Date.now': 2,
    clearInterval: 1,
    'performance.now': 4,
    randomUUID: 1,
    setInterval: 1,
  },
  'packages/runtime/src/time-travel.ts': {
    'Date.now': 1,
    createId: 2,
    randomUUID: 1,
  },
  'packages/store-sqlite/src/sqlite-backend.ts': {
    'Date.now': 2,
  },
};
