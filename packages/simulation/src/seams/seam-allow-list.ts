import type { SeamCounts } from './seam-scan.js';

/**
 * The call sites of host time, timers and randomness that the Clock / IdSource wiring has not reached yet, counted
 * by file and rule. It may only shrink: `seams.test.ts` fails on a new site, and on a site removed without
 * shrinking this list (`pnpm --filter @lunation/simulation seams --write` rewrites it, refusing any growth).
 */
export const seamAllowList: SeamCounts = {
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
  'packages/store-sqlite/src/sqlite-backend.ts': {
    'Date.now': 2,
  },
};
