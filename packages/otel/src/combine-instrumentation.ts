import type {
  Instrumentation,
  InstrumentedOperation,
  LeaseRejectionFact,
  RunInstrumentation,
  RunStartFact,
} from '@lunation/contract';

/**
 * One `Instrumentation` that tells every one of `list` each fact, e.g. tracing and metrics together
 * (`combineInstrumentation(openTelemetryInstrumentation(), lunationMetrics())`). The trace context stored with a
 * suspended run is the first one any of them gives.
 */
export function combineInstrumentation(...list: Instrumentation[]): Instrumentation {
  if (list.length === 1 && list[0]) return list[0];
  return {
    runStarted(fact: RunStartFact): RunInstrumentation | undefined {
      const runs = list.flatMap((each) => each.runStarted(fact) ?? []);
      if (runs.length === 0) return undefined;
      if (runs.length === 1) return runs[0];
      return {
        modelCallStarted: (call) => operations(runs.map((run) => run.modelCallStarted(call))),
        toolCallStarted: (call) => operations(runs.map((run) => run.toolCallStarted(call))),
        checkpointStarted: (kind) => operations(runs.map((run) => run.checkpointStarted(kind))),
        ledgerHit: (hit) => {
          for (const run of runs) run.ledgerHit(hit);
        },
        toolCallSuspended: (ticket) => {
          for (const run of runs) run.toolCallSuspended(ticket);
        },
        toolCallResumed: (toolCallId, decision) => {
          for (const run of runs) run.toolCallResumed(toolCallId, decision);
        },
        lease: (lease) => {
          for (const run of runs) run.lease(lease);
        },
        suspendContext: () => {
          for (const run of runs) {
            const carrier = run.suspendContext();
            if (carrier) return carrier;
          }
          return undefined;
        },
        runEnded: (ended) => {
          for (const run of runs) run.runEnded(ended);
        },
      };
    },
    leaseRejected(fact: LeaseRejectionFact): void {
      for (const each of list) each.leaseRejected?.(fact);
    },
  };
}

function operations<Outcome>(
  started: (InstrumentedOperation<Outcome> | undefined)[],
): InstrumentedOperation<Outcome> | undefined {
  const live = started.filter((operation) => operation !== undefined);
  if (live.length === 0) return undefined;
  if (live.length === 1) return live[0];
  return {
    end: (outcome) => {
      for (const operation of live) operation.end(outcome);
    },
  };
}
