import type { LunationStore } from '@lunation/contract';
import { afterEach, beforeEach, describe } from 'vitest';
import { checkpointSpec } from './specs/checkpoint-spec.js';
import { commitSpec } from './specs/commit-spec.js';
import { concurrencySpec } from './specs/concurrency-spec.js';
import { inputSpec } from './specs/input-spec.js';
import { isolationSpec } from './specs/isolation-spec.js';
import { leasesSpec } from './specs/leases-spec.js';
import { ledgerSpec } from './specs/ledger-spec.js';
import { messagesSpec } from './specs/messages-spec.js';
import { payloadsSpec } from './specs/payloads-spec.js';
import { runsSpec } from './specs/runs-spec.js';
import { threadStateSpec } from './specs/thread-state-spec.js';
import { threadsSpec } from './specs/threads-spec.js';
import { toolEffectsSpec } from './specs/tool-effects-spec.js';
import { typecheckSpec } from './specs/typecheck-spec.js';
import type { StoreSpecContext } from './store-spec-context.js';

/** Options of {@link runStoreConformance}. */
export interface StoreConformanceOptions {
  /** The store's name, shown in the test names, e.g. `sqlite`. */
  name: string;
  /** A fresh, isolated, empty store for one test. */
  create(): Promise<LunationStore>;
  /** Closes/cleans it up after the test. @default store.close() */
  destroy?(store: LunationStore): Promise<void>;
  /**
   * A second store instance on the SAME backend as `store` (another connection / process view), for
   * concurrency specs; omit when the backend cannot have two instances (those specs are then skipped with
   * that reason stated).
   */
  createSibling?(store: LunationStore): Promise<LunationStore>;
  /**
   * The store implements `TransactionalToolEffects` (its specs run); when false, the suite checks that it does
   * not claim to. @default false
   */
  transactionalToolEffects?: boolean;
  /**
   * How the suite typechecks the store's package (vitest itself does not typecheck, so without it a contract
   * change that breaks the store passes): by default with the nearest `tsconfig.json` above the test file that
   * calls the suite (up to its `package.json`); a path or URL names another; `false` skips the check, saying so.
   * The compiler runs beside the other specs and keeps its incremental state in `node_modules/.cache`.
   * @default the nearest tsconfig.json
   */
  tsconfig?: string | URL | false;
}

/** Registers the LunationStore conformance suite (vitest `describe`/`it`) for one store implementation. */
export function runStoreConformance(options: StoreConformanceOptions): void {
  describe(`LunationStore conformance: ${options.name}`, () => {
    let current: LunationStore | undefined;
    let siblings: LunationStore[] = [];

    const context: StoreSpecContext = {
      get store(): LunationStore {
        if (current === undefined)
          throw new Error('The store only exists inside a test; use it in it() or a hook');
        return current;
      },
      hasSiblings: options.createSibling !== undefined,
      async openSibling(): Promise<LunationStore> {
        if (options.createSibling === undefined) {
          throw new Error(`Store "${options.name}" cannot open a sibling: createSibling was not given`);
        }
        const sibling = await options.createSibling(context.store);
        siblings.push(sibling);
        return sibling;
      },
    };

    beforeEach(async () => {
      current = await options.create();
    });

    afterEach(async () => {
      const store = current;
      const opened = siblings;
      current = undefined;
      siblings = [];
      for (const sibling of opened) await sibling.close();
      if (store === undefined) return;
      if (options.destroy) await options.destroy(store);
      else await store.close();
    });

    threadsSpec(context);
    messagesSpec(context);
    runsSpec(context);
    threadStateSpec(context);
    commitSpec(context);
    checkpointSpec(context);
    ledgerSpec(context);
    toolEffectsSpec(context, options.transactionalToolEffects === true);
    leasesSpec(context);
    payloadsSpec(context);
    inputSpec(context);
    isolationSpec(context);
    concurrencySpec(context);
    typecheckSpec(context, options.tsconfig);
  });
}
