import type { InboxWorldOptions } from './inbox-world.js';
import type { RuntimeWorldOptions } from './runtime-world.js';
import type { DispatchFaults } from './simulated-dispatcher.js';

/** The fault profiles `pnpm simulate --faults` knows. */
export type FaultProfile =
  | 'none'
  | 'crash'
  | 'all'
  | 'redelivery'
  | 'handover'
  | 'appends'
  | 'stalls'
  | 'resumes'
  | 'replicas';

/** For each profile, the options of each world. */
export const faultProfiles: Record<
  FaultProfile,
  { inbox: Omit<InboxWorldOptions, 'seed'>; runtime: Omit<RuntimeWorldOptions, 'seed'> }
> = {
  none: { inbox: {}, runtime: {} },
  crash: { inbox: { crashRate: 0.05 }, runtime: { crashRate: 0.01 } },
  all: allFaults(),
  // Every fault, plus one the mutation campaign added: claims delivered again within 50 ms (10 % of claims), so two
  // workers are on one thread at once; and tools that take up to 100 ms more, so a holder is often still in its
  // tool when the thread is delivered again. Drawn from a stream of its own, so `all`'s seeds (and the regression seeds
  // kept from them) keep their schedules.
  redelivery: redeliveryFaults(),
  // `redelivery`, and every holder whose claim a fault took away crashes soon after, at one of its next few operations
  // (`RevokedHolderCrashes`, a stream of its own): the run it may still be running is then the claim's new holder's
  // to see to, whatever that worker found in the store (seed 616's story: a submission acknowledged because its run
  // was found `running`, the holder then dead and the run stranded).
  handover: (() => {
    const redelivery = redeliveryFaults();
    return { ...redelivery, runtime: { ...redelivery.runtime, revokedHolderCrash: 1 } };
  })(),
  // Every fault, plus event appends that fail (2 % of appends): the log must still get all the committed work.
  // Drawn from a stream of its own, like `redelivery`'s.
  appends: withDispatchFaults({ failedAppend: 0.02 }),
  // Every fault, plus those the runtime's clock seam made possible: a worker stalled past its lease and resumed (the
  // zombie) — at random, and aimed at a commit, a ledger write, a claim extension or an inbox read (`AimedStalls`) —,
  // clock skew between workers, model errors, slow answers and hangs, tools that throw, hang or ignore their signal.
  // Each from a stream of its own, like `redelivery`'s.
  stalls: stallsFaults(),
  // `stalls`, with steps of several gated or interrupt-kind calls (the model calls `refund`, `notify` or `invoice`
  // two or three times in a step, half the time): a resume continues several calls in one step, each completion
  // written as it finishes, and a crash or a stall falls between them. Drawn from a stream of its own.
  resumes: (() => {
    const stalls = stallsFaults();
    return { ...stalls, runtime: { ...stalls.runtime, repeatedCalls: 0.5 } };
  })(),
  // `stalls`, with every worker under one owner name (replicas of one configuration, each incarnation its own):
  // the lease's same-owner takeover (after three quarters of its time to live unrenewed) between live processes.
  replicas: (() => {
    const stalls = stallsFaults();
    return { ...stalls, runtime: { ...stalls.runtime, sharedOwner: true } };
  })(),
};

function allFaults(): { inbox: Omit<InboxWorldOptions, 'seed'>; runtime: Omit<RuntimeWorldOptions, 'seed'> } {
  return {
    inbox: {
      crashRate: 0.05,
      storeFaults: {
        lostWrite: 0.02,
        unacknowledgedWrite: 0.02,
        unavailable: 0.02,
        busy: 0.02,
        conflict: 0.02,
        late: 0.05,
      },
      dispatchFaults: { duplicateDelivery: 0.1, lostClaim: 0.05, lostAcknowledgement: 0.05, late: 0.05 },
    },
    runtime: {
      crashRate: 0.01,
      storeFaults: { lostWrite: 0.01, unacknowledgedWrite: 0.01, unavailable: 0.01, late: 0.02 },
      dispatchFaults: { duplicateDelivery: 0.05, lostClaim: 0.02, lostAcknowledgement: 0.02, late: 0.02 },
    },
  };
}

function redeliveryFaults(): {
  inbox: Omit<InboxWorldOptions, 'seed'>;
  runtime: Omit<RuntimeWorldOptions, 'seed'>;
} {
  const profile = withDispatchFaults({ promptRedelivery: 0.1 });
  return { ...profile, runtime: { ...profile.runtime, toolDelayMs: 100 } };
}

function stallsFaults(): {
  inbox: Omit<InboxWorldOptions, 'seed'>;
  runtime: Omit<RuntimeWorldOptions, 'seed'>;
} {
  const all = allFaults();
  return {
    ...all,
    runtime: {
      ...all.runtime,
      workerFaults: {
        stall: 0.02,
        aimedStall: 1,
        skewMs: 5_000,
        modelError: 0.03,
        modelSlow: 0.03,
        modelHang: 0.01,
        toolThrow: 0.02,
        toolHang: 0.01,
        toolIgnoresSignal: 0.01,
      },
    },
  };
}

/** `all`, with more dispatcher faults in the runtime world. */
function withDispatchFaults(more: DispatchFaults): {
  inbox: Omit<InboxWorldOptions, 'seed'>;
  runtime: Omit<RuntimeWorldOptions, 'seed'>;
} {
  const all = allFaults();
  return { ...all, runtime: { ...all.runtime, dispatchFaults: { ...all.runtime.dispatchFaults, ...more } } };
}
