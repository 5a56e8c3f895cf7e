import type { Dispatcher, DispatchPolicy } from '@lunation/contract';
import { afterEach, describe } from 'vitest';
import type { DispatchSpecContext } from './dispatch-spec-context.js';
import { backpressureSpec } from './specs/backpressure-spec.js';
import { cancelSpec } from './specs/cancel-spec.js';
import { claimSpec } from './specs/claim-spec.js';
import { closeSpec } from './specs/close-spec.js';
import { completionSpec } from './specs/completion-spec.js';
import { depthSpec } from './specs/depth-spec.js';
import { eventsSpec } from './specs/events-spec.js';
import { fenceSpec } from './specs/fence-spec.js';
import { fleetSpec, type WorkerProcessOptions } from './specs/fleet-spec.js';
import { handBackSpec } from './specs/hand-back-spec.js';
import { inboxSpec } from './specs/inbox-spec.js';
import { lostClaimSpec } from './specs/lost-claim-spec.js';
import { retrySpec } from './specs/retry-spec.js';
import { submitSpec } from './specs/submit-spec.js';
import { subscribeSpec } from './specs/subscribe-spec.js';
import { typecheckSpec } from './specs/typecheck-spec.js';

/** Options of {@link runDispatcherConformance}. */
export interface DispatcherConformanceOptions {
  /** The dispatcher's name, shown in the test names, e.g. `bullmq`. */
  name: string;
  /** A dispatcher on a fresh, isolated, empty backend, honouring `policy`. */
  create(policy: DispatchPolicy): Promise<Dispatcher>;
  /** A second dispatcher on the SAME backend as `dispatcher` (as another process would have), with `policy`. */
  createSibling(dispatcher: Dispatcher, policy: DispatchPolicy): Promise<Dispatcher>;
  /** Cleans a dispatcher made by `create` up after its test (its siblings are closed first). @default close() */
  destroy?(dispatcher: Dispatcher): Promise<void>;
  /**
   * The longest the backend takes to hand a thread to a waiting claim once the thread became claimable again
   * (a lock expired, a backoff or hand-back delay ran out, a tenant slot freed). @default 5000
   */
  redeliveryMs?: number;
  /**
   * How the suite typechecks the dispatcher's package (vitest itself does not typecheck, so without it a contract
   * change that breaks the dispatcher passes): by default with the nearest `tsconfig.json` above the test file that
   * calls the suite (up to its `package.json`); a path or URL names another; `false` skips the check, saying so.
   * The compiler runs beside the other specs and keeps its incremental state in `node_modules/.cache`.
   * @default the nearest tsconfig.json
   */
  tsconfig?: string | URL | false;
  /**
   * How the kit runs a worker in another process on your backend, for the spec that kills it with SIGKILL
   * mid-claim: `module` exports `openDispatcher(backend, policy)` (a dispatcher on the backend that `backend(dispatcher)`
   * names, e.g. its key prefix or schema). `false` when no other process can reach the backend (an in-process
   * dispatcher): that test is skipped, saying so. Without it, that test fails asking for it.
   */
  workerProcess?: WorkerProcessOptions | false;
}

/** Registers the Dispatcher conformance suite (vitest `describe`/`it`) for one dispatcher implementation. */
export function runDispatcherConformance(options: DispatcherConformanceOptions): void {
  describe(`Dispatcher conformance: ${options.name}`, () => {
    let created: Dispatcher[] = [];
    let siblings: Dispatcher[] = [];
    const policies = new WeakMap<Dispatcher, DispatchPolicy>();

    const context: DispatchSpecContext = {
      redeliveryMs: options.redeliveryMs ?? 5_000,
      async open(policy: DispatchPolicy = {}): Promise<Dispatcher> {
        const dispatcher = await options.create(policy);
        created.push(dispatcher);
        policies.set(dispatcher, policy);
        return dispatcher;
      },
      async openSibling(dispatcher: Dispatcher): Promise<Dispatcher> {
        const policy = policies.get(dispatcher) ?? {};
        const sibling = await options.createSibling(dispatcher, policy);
        siblings.push(sibling);
        policies.set(sibling, policy);
        return sibling;
      },
    };

    afterEach(async () => {
      const opened = siblings;
      const dispatchers = created;
      siblings = [];
      created = [];
      for (const sibling of opened) await sibling.close();
      for (const dispatcher of dispatchers) {
        if (options.destroy) await options.destroy(dispatcher);
        else await dispatcher.close();
      }
    });

    submitSpec(context);
    claimSpec(context);
    inboxSpec(context);
    lostClaimSpec(context);
    completionSpec(context);
    retrySpec(context);
    handBackSpec(context);
    depthSpec(context);
    backpressureSpec(context);
    cancelSpec(context);
    eventsSpec(context);
    fenceSpec(context);
    subscribeSpec(context);
    closeSpec(context);
    fleetSpec(context, options.workerProcess);
    typecheckSpec(context, options.tsconfig);
  });
}
