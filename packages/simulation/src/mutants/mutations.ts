import type { Mutation } from './mutation.js';

const memoryOperations = 'packages/store-memory/src/memory-operations.ts';
const threadWork = 'packages/fleet/src/thread-work.ts';
const applySubmission = 'packages/fleet/src/apply-submission.ts';
const runRecovery = 'packages/fleet/src/run-recovery.ts';
const followRun = 'packages/fleet/src/follow-run.ts';
const eventPipe = 'packages/fleet/src/event-pipe.ts';
const fleetClient = 'packages/fleet/src/fleet-client.ts';
const toolRunner = 'packages/runtime/src/loop/tool-runner.ts';

/**
 * The mutation campaign's defects (`pnpm --filter @lunation/simulation mutants`): deliberate mutations of the
 * runtime, the fleet and the memory store (the simulated store runs `MemoryStore`'s operations), and fixes of the
 * project reverted (issue 33's items and the defects the simulator found since). Each is one exact edit; the
 * campaign fails when a search text no longer occurs exactly once.
 */
export const mutations: readonly Mutation[] = [
  // ——— The store: fences, the ledger, leases ———
  {
    name: 'commit-fence-skipped',
    description:
      'A commit carrying an older lease token than the newest issued is applied (the fence skipped).',
    origin: 'mutation',
    file: memoryOperations,
    search: `    this.assertFreshLease(threadId, leaseToken);
    const latest = leases?.highestToken ?? 0;`,
    replace: `    const latest = leases?.highestToken ?? 0;`,
    faults: 'stalls',
    needs:
      "a held commit: the holder stalls with its commit sent and not applied, its lease expires, another worker takes the thread, and the commit lands before the successor's first commit changes the message count (the `stalls` profile's aimed stalls)",
  },
  {
    name: 'ledger-begin-fence-skipped',
    description:
      "beginToolExecution does not check the caller's lease token: a fenced-out holder records a start.",
    origin: 'mutation',
    file: memoryOperations,
    search: `    this.assertFreshLease(input.threadId, input.leaseToken);
    const existing = this.backend.ledger.get(input.runId)?.get(input.toolCallId);`,
    replace: `    const existing = this.backend.ledger.get(input.runId)?.get(input.toolCallId);`,
    faults: 'stalls',
    masked:
      "a stale begin the store admits is followed by the runtime's last look at the lease (held only while confirmed less than three quarters of its time to live ago on the process's own clock), which a holder whose lease another process took always fails: that process got the lease only once it expired in the store, a whole time to live after the last renewal; the tool never starts and nothing more is written. The stray begin leaves an in-flight entry or one more attempt, which the successor reads as an interrupted call (a re-run flagged, a fail call failed, an ask call asked): outcomes no invariant forbids",
  },
  {
    name: 'takeover-without-expiry',
    description: 'acquireLease takes a thread whose lease has not expired (any caller, any time).',
    origin: 'mutation',
    file: memoryOperations,
    search: 'if (active !== undefined && active.expiresAt > now && !mayTakeOver(active, input, now)) {',
    replace: 'if (active !== undefined && active.expiresAt > now && false) {',
    // Under `redelivery` found at 22, then 702, then not in 2,000 as the runtime's lease checks grew: a live holder's
    // lease taken at once shows when that holder is slow (a stall) and goes on.
    faults: 'stalls',
  },
  {
    name: 'same-owner-takeover-at-once',
    description:
      "A new incarnation of the lease's owner takes it over at once, not after three quarters of its time to live without renewal.",
    origin: 'mutation',
    file: memoryOperations,
    search: '4 * (now - held.renewedAt) >= 3 * (held.expiresAt - held.renewedAt)',
    replace: 'true',
    // Replicas sharing an owner: in `stalls` each worker has its own owner and a new incarnation follows only a
    // crash, so an early same-owner takeover only ever takes a dead process's lease.
    faults: 'replicas',
  },
  {
    name: 'same-owner-takeover-at-half',
    description:
      "A new incarnation of the lease's owner takes it over after half its time to live without renewal (store specification v1), while its holder still counts the lease fresh.",
    origin: 'reverted: store specification v2 (replicas sharing an owner)',
    file: memoryOperations,
    search: '4 * (now - held.renewedAt) >= 3 * (held.expiresAt - held.renewedAt)',
    replace: '2 * (now - held.renewedAt) >= held.expiresAt - held.renewedAt',
    faults: 'replicas',
  },
  {
    name: 'commit-count-unchecked',
    description: "A commit is applied although the thread's message count is not the one it expected.",
    origin: 'mutation',
    file: memoryOperations,
    search: 'if (commit.expectedMessageCount !== slot.messageCount) {',
    replace: 'if (false) {',
  },
  {
    name: 'completed-ledger-entry-overwritten',
    description: 'A completed ledger entry is overwritten by a later in-flight one (its result forgotten).',
    origin: 'mutation',
    file: memoryOperations,
    search: `      if (existing.entry.status === 'completed') return; // a completed entry is final`,
    replace: `      // (mutated: a completed entry is overwritten)`,
    faults: 'stalls',
    needs:
      "a commit carrying a completed entry for a call whose entry a completion already closed (seed 70 of `stalls`: a transactional call's completion with its effect applied though its answer was lost, an unacknowledged write; the runtime's error result for it then rode in the step commit), seen by the invariant that a completed ledger entry is final (masked before it: nothing read the entry again)",
  },
  {
    name: 'begin-reopens-completed-entry',
    description:
      'beginToolExecution of a completed call answers a fresh in-flight entry (not the recorded result): the result is forgotten.',
    origin: 'mutation',
    file: memoryOperations,
    search: `    if (existing.entry.status === 'completed') return copyJson(existing.entry);
    existing.entry.attempts += 1;`,
    replace: `    if (existing.entry.status === 'completed') existing.entry = { ...existing.entry, status: 'in-flight', result: undefined };
    existing.entry.attempts += 1;`,
    faults: 'resumes',
    needs:
      'a current holder that begins a call an earlier holder completed under its lease: a decided or interrupted call resumed in a step of several calls, its completion written at once (not riding in the step commit), the holder then losing the thread before the step commit; the successor restores the call from its record and begins it (profile `resumes`: steps of several gated or interrupt-kind calls). Seen by the invariant that a completed ledger entry is final. Stale begins on completed entries (aimed stalls) are refused by the fence first',
  },
  // ——— The runtime: the ledger, re-runs, endings ———
  {
    name: 'ledger-lookup-skipped',
    description:
      'A restored call does not look up the ledger: a call that finished before a crash is run again.',
    origin: 'mutation',
    file: 'packages/runtime/src/loop/resume.ts',
    search: 'const entry = await checkpointer.lookup(plan.runId, call);',
    replace: 'const entry = undefined as Awaited<ReturnType<typeof checkpointer.lookup>>;',
  },
  {
    name: 'ledger-hit-ignored',
    description: 'A call whose ledger entry is completed runs again instead of taking the recorded result.',
    origin: 'mutation',
    file: toolRunner,
    search: `      if (entry?.status === 'completed' && entry.result) {
        moveTo(plan, entry.result.status === 'error' ? 'failed' : 'succeeded');`,
    replace: `      if (false) {
        moveTo(plan, entry.result.status === 'error' ? 'failed' : 'succeeded');`,
    faults: 'resumes',
    needs:
      'a current holder that begins a call an earlier holder completed under its lease: a decided or interrupted call resumed in a step of several calls, its completion written at once (not riding in the step commit), the holder then losing the thread before the step commit; the successor restores the call from its record and begins it (profile `resumes`: steps of several gated or interrupt-kind calls)',
  },
  {
    name: 'rerun-flag-dropped',
    description: 'A call run again (its ledger entry already had an attempt) runs with `rerun: false`.',
    origin: 'mutation',
    file: toolRunner,
    search: `      rerun =
        (entry?.attempts ?? 1) > (plan.attempts ?? 0) + 1 ||`,
    replace: `      rerun = false &&
        (entry?.attempts ?? 1) > (plan.attempts ?? 0) + 1 ||`,
  },
  {
    name: 'tool-start-without-lease-check',
    description:
      'A tool starts without the last look at the lease (issue 33 item 5: a stalled holder keeps starting tools).',
    origin: 'reverted: issue 33 item 5',
    file: toolRunner,
    search: `    // Last look before the side effect: another process may hold the thread now if this one stalled.
    if (!scope.holdsLease()) return notStarted(this.stage, plan);`,
    replace: `    // (mutated: no last look at the lease)`,
    faults: 'stalls',
    needs:
      'a stalled holder whose ledger begin applied and whose answer came after another worker took the lease (aimed stalls)',
  },
  {
    name: 'run-end-announced-though-commit-failed',
    description:
      'A run whose end commit failed (not fenced) announces the ending it meant, not an error: its log ends as the store never had it.',
    origin: 'mutation',
    file: 'packages/runtime/src/loop/run-end.ts',
    search: `    if (termination.type !== 'error') termination = { type: 'error', error: toErrorInfo(error) };`,
    replace: `    // (mutated: the failed commit is not the run's ending)`,
  },
  // ——— The fleet: the inbox, acknowledgements, the log ———
  {
    name: 'acknowledge-before-commit',
    description:
      'A worker acknowledges a submission before it applies it (a crash in between loses the input).',
    origin: 'mutation',
    file: threadWork,
    search: `          const held = await busyFrom(() => applySubmission(this.thread, entry));
          if (held) return held;
          await dispatcher.acknowledge(threadId, [entry.id]);`,
    replace: `          await dispatcher.acknowledge(threadId, [entry.id]);
          const held = await busyFrom(() => applySubmission(this.thread, entry));
          if (held) return held;`,
  },
  {
    name: 'applied-check-skipped',
    description: 'A redelivered submission whose run is already in the store is applied again.',
    origin: 'mutation',
    file: applySubmission,
    search: `  const applied = await thread.context.store.getRun(runId);
  if (applied === undefined) return false;`,
    replace: `  const applied = undefined as { status: string } | undefined;
  if (applied === undefined) return false;`,
    masked:
      "the store refuses a second run with the submission's run id (store-conflict), and the worker then continues or repairs that run",
  },
  {
    name: 'stranded-run-not-recovered',
    description: 'A claim does not continue the run a dead worker left running (nothing ever continues it).',
    origin: 'mutation',
    file: threadWork,
    search: 'const busy = await busyFrom(() => recoverLatestRun(this.thread));',
    replace: 'const busy = undefined as ThreadWorkOutcome | undefined;',
    masked:
      "every run of the world starts from a submission that stays unacknowledged until the run ends, and applying it again continues a run left running: an input whose run is in the store (the applied check), a new input (the executor continues the latest running run first), and since the fix of seed 732856 decisions that find nothing left to decide. Only a `continue` (the stranded-run scan's, for a run with no submission pending) relies on the claim's recovery. Found at seed 1 before that fix; not in 6,000 seeds after it",
  },
  {
    name: 'failed-append-dropped',
    description:
      'An event append that failed is not retried: its events never reach the log (issue 33 item 6: the log misses committed work).',
    origin: 'reverted: issue 33 item 6',
    file: eventPipe,
    search: 'this.batch = this.batch.length === 0 ? events : events.concat(this.batch);',
    replace: '// (mutated: the failed append is dropped)',
    faults: 'appends',
    needs:
      "the runtime clock seam (on main the pipe's retry sleep is a real timer: the world's virtual time runs past it)",
  },
  {
    name: 'redelivered-claim-dead-letters',
    description:
      'A redelivered claim whose run the previous holder finished meanwhile fails the claim (issue 33 item 4).',
    origin: 'reverted: issue 33 item 4',
    file: runRecovery,
    search:
      "const now = LunationError.hasCode(error, 'invalid-argument') ? await store.getRun(runId) : undefined;",
    replace: 'const now = undefined as { status: string } | undefined;',
    faults: 'redelivery',
    needs:
      'a claim delivered again while its holder finishes the run (prompt redelivery: profile `redelivery`), seen by the invariant that no thread is dead-lettered (the operator resubmitting dead letters hid it before)',
  },
  {
    name: 'claim-not-extended-before-apply',
    description:
      'A worker applies the next submission without extending its claim first: a worker whose claim was taken applies it too (fix 45996d7 reverted).',
    origin: 'reverted: 45996d7',
    file: threadWork,
    search: `          await extendClaim(this.thread);
          const held = await busyFrom(() => applySubmission(this.thread, entry));`,
    replace: `          const held = await busyFrom(() => applySubmission(this.thread, entry));`,
    faults: 'stalls',
    masked:
      'a worker whose claim lapsed applies an entry another worker may have applied: an input whose run is in the store meets the applied check (the run is continued under the lease or its log repaired), decisions meet closed tickets, and an input for a thread deleted since is dropped (not-found) because fronts create threads (bf3ef2f). The harm it was found by (seed 234: a deleted thread brought back) is the last; not found in 6,000 seeds of `stalls` since',
  },
  {
    name: 'unstored-run-acknowledged',
    description:
      'A submission whose run never reached the store (first commit and error ending both failed) is acknowledged (fix 9fe03af reverted: seeds 444, 147, 494).',
    origin: 'reverted: 9fe03af',
    file: followRun,
    search: `  const stored = await thread.context.store.getRun(runId);
  if (own?.type === 'run-end' && stored?.status === own.status && stored.termination?.type === 'error')
    return own;`,
    replace: `  const stored = await thread.context.store.getRun(runId);
  if (stored === undefined) return own;
  if (own?.type === 'run-end' && stored?.status === own.status && stored.termination?.type === 'error')
    return own;`,
  },
  {
    name: 'error-ending-logged-before-commit',
    description:
      "A run's error ending reaches its log before the store is known to have it (fixes fc9374f and 9cc8070 reverted: seeds 228, 10).",
    origin: 'reverted: fc9374f + 9cc8070',
    file: followRun,
    search: `  if (result.termination.type === 'error') {
    await piped.pipe.flush(); // what the run did reaches its log, whatever its ending turns out to be
    end = await storedEnding(thread, ids.runId, end);
  }`,
    replace: `    // (mutated: the error ending is logged whatever the store has)`,
  },
  {
    name: 'running-run-acknowledged',
    description:
      'A submission whose run is found running when its claim comes again is acknowledged, its holder trusted to finish it (the fix of this campaign reverted).',
    origin: 'reverted: ThreadWork.apply (seed 528)',
    file: applySubmission,
    search: `  if (applied.status === 'running') await recoverLatestRun(thread);
  else await repairLog(thread, applied);`,
    replace: `  if (applied.status !== 'running') await repairLog(thread, applied);`,
    faults: 'handover',
    needs:
      "a claim delivered again while its holder starts the run (its first commit lands after the new holder's recovery looked), the holder then dying before the run ends, with nothing more submitted to the thread (profile `handover`: the holder whose claim was taken away crashes soon after)",
  },
  {
    name: 'recovery-recreates-deleted-thread',
    description:
      "A claim's recovery opens the stranded run's thread with `create`: a worker that stalled after reading the run re-creates the thread the user deleted meanwhile, without the ledger that went with it (the fix of seed 5283 reverted).",
    origin: 'reverted: continueRun (seed 5283 of handover)',
    file: runRecovery,
    search:
      'return await executor.run({ threadId, existingThread: true, ...thread.cancel.signalFor(runId) });',
    replace: 'return await executor.run({ threadId, ...thread.cancel.signalFor(runId) });',
    faults: 'handover',
    needs:
      'a redelivered claim whose recovery reads a running run, a late store call that holds the worker until the user has deleted the thread, and a transactional effect committed in it before (seed 5283 of `handover`, a regression case in runtime-world.test.ts)',
  },
  {
    name: 'unrecorded-decisions-reported-applied',
    description:
      'Decisions that leave tickets open are reported applied though the run did not wait again (its lease lost before it recorded them): the worker acknowledges them (the fix of seed 14616 reverted).',
    origin: 'reverted: decideOn (seed 14616 of resumes)',
    file: 'packages/runtime/src/executor/open-run.ts',
    search: "    if (result.status !== 'waiting') return { ...outcome, run: handle };\n",
    replace: '',
    faults: 'resumes',
    needs:
      'a decision for one of several tickets applied by a worker whose lease runs out before the run records it, and a contrary decision for the same ticket sent after the first was admitted (seed 14616 of `resumes`, a regression case in runtime-world.test.ts)',
  },
  {
    name: 'waiting-again-log-unrepaired',
    description:
      "Decisions that leave a ticket open reach the store but not the run's log: a later repair appends the decided call's result after the run's end (the fix of seeds 10332 and 38849 reverted).",
    origin: 'reverted: applyRequest (seeds 10332 of resumes, 38849 of handover)',
    file: applySubmission,
    search: '    else await repairWaitingLog(thread);\n',
    replace: '',
    faults: 'resumes',
    needs:
      'decisions for some of several tickets, a run-end of the resumed run in its log, then a repair of the log by the next holder (seeds 10332, 12231 and 26777 of `resumes`, a regression case in runtime-world.test.ts)',
  },
  {
    name: 'partial-decision-result-untold',
    description:
      "A call settled by decisions that leave another ticket open (a denial) is recorded but never told as a `tool-result`: a run cancelled then ends with it only in its tool message, and a repair of the log appends it after the run's end (the fix of seed 34686 reverted).",
    origin: 'reverted: ToolCalls.resume (seed 34686 of handover)',
    file: 'packages/runtime/src/loop/tool-calls.ts',
    search: "      for (const plan of plans) if (plan.resultFrom !== 'record') reportResult(scope, plan);\n",
    replace: '',
    faults: 'handover',
    needs:
      'a cancel of a run waiting on two tickets with a denial of one, applied by a worker that stalls before its end mark while a redelivered claim repairs the log (seed 34686 of `handover`, its only seed in 100,000; a regression case in runtime-world.test.ts and a runtime test in send-decisions.test.ts)',
  },
  {
    name: 'refused-end-mark-fails-claim',
    description:
      "A run's end mark refused because a newer lease holder claimed the log fails the claim: a healthy thread is dead-lettered (the fix of seed 1801 reverted).",
    origin: 'reverted: endLog (seed 1801 of stalls)',
    file: eventPipe,
    search: `    if (LunationError.hasCode(error, 'stale-lease')) return 'refused';
    throw error;`,
    replace: '    throw error;',
    faults: 'stalls',
  },
  {
    name: 'applied-decisions-leave-run-stranded',
    description:
      'A decisions submission that finds nothing left to decide is acknowledged though the run its first holder resumed is left running (the fix of seed 732856 reverted).',
    origin: 'reverted: applyRequest (seed 732856 of the million)',
    file: applySubmission,
    search: '    else if (outcome.applied.length === 0) await recoverLatestRun(thread);',
    replace: '',
    needs:
      "a slow holder applying the decisions between another claim's recovery and its own decide, then losing the thread with the resumed run running: 1 seed of 1,000,000 in `all` (732856, a regression case in runtime-world.test.ts)",
  },
  // ——— Cancels and decisions (they need a world that cancels and decides) ———
  {
    name: 'cancel-without-run-id',
    description:
      'A cancel is filed without the run it names: it outlives its run and cancels the next one (issue 33 item 1).',
    origin: 'reverted: issue 33 item 1',
    file: fleetClient,
    search: 'const request = await this.dispatcher.requestCancel({ threadId, runId, reason });',
    replace: 'const request = await this.dispatcher.requestCancel({ threadId, reason });',
  },
  {
    name: 'waiting-cancel-dropped',
    description:
      'A cancel of a run waiting for a decision declines nothing: approving later runs the gated tool (issue 33 item 2).',
    origin: 'reverted: issue 33 item 2',
    file: fleetClient,
    search: `      await this.dispatcher.submit({ id, threadId, request: { type: 'decisions', decisions } });`,
    replace: `      void decisions;`,
    masked:
      'the named cancel request stays filed, and the decision that comes later finds it and ends the run cancelled; the run only waits longer (no invariant bounds how long a cancelled waiting run may wait)',
  },
  {
    name: 'decision-applied-twice',
    description: 'A decision already applied (or recorded) is admitted again.',
    origin: 'mutation',
    file: 'packages/runtime/src/decision-admission.ts',
    search: 'if (applied.has(decisionId) || recorded.has(decisionId) || decided.has(decisionId)) {',
    replace: 'if (decided.has(decisionId)) {',
    masked:
      'a decision applied once closes its ticket: the same decision again names a ticket no longer open and is refused (unknown-ticket)',
  },
];
