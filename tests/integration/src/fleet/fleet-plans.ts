import type { FleetPlan } from '../../fixtures/fleet-agent.js';
import type { SeededRandom } from '../../fixtures/seeded-random.js';

/** When the user cancels a run through the front it did not submit on. */
export type CancelMoment =
  /** `cancelAfterMs` after submitting it, wherever it is then. */
  | 'running'
  /** At its first wait for an approval, before approving (the approval follows the cancel). */
  | 'waiting'
  /** After its end, before the thread's next message (the cancel must not reach the next run). */
  | 'after-end';

/** One message of a thread: the plan its run plays, and whether (and when) the user cancels the run. */
export interface RunPlan {
  plan: FleetPlan;
  cancel: CancelMoment | undefined;
  cancelAfterMs: number;
}

/** A thread's messages, sent one after the other, each once the run before it ended. */
export interface ThreadPlan {
  label: string;
  runs: RunPlan[];
}

export interface PlanOptions {
  cancels: number;
  followUps: number;
}

/** Thread `index`'s plan: 1–3 steps of 1–2 calls a run (30% gated), a follow-up and cancels at the given shares. */
export function threadPlan(random: SeededRandom, index: number, options: PlanOptions): ThreadPlan {
  const messages = random.chance(options.followUps) ? 2 : 1;
  const runs = Array.from({ length: messages }, (_, message): RunPlan => {
    const steps = Array.from({ length: random.integer(1, 3) }, () =>
      Array.from({ length: random.integer(1, 2) }, () => ({
        tool: random.chance(0.3) ? ('ask' as const) : ('work' as const),
        durationMs: random.integer(100, 1_200),
      })),
    );
    const gated = steps.some((calls) => calls.some((call) => call.tool === 'ask'));
    let cancel: CancelMoment | undefined;
    if (random.chance(options.cancels)) {
      cancel = random.weighted<CancelMoment>([
        ['running', 2],
        ['waiting', gated ? 2 : 0],
        ['after-end', 1],
      ]);
    }
    return {
      plan: { label: `t${index}-m${message + 1}`, steps },
      cancel,
      cancelAfterMs: random.integer(0, 2_500),
    };
  });
  return { label: `t${index}`, runs };
}
