import type { FleetCpuHogConfig } from '../../fixtures/fleet-cpu-hog.js';
import { type FixtureProcess, startFixtureProcess } from '../process-harness.js';

/** Starts `count` CPU hogs (spinning `duty` of the time) beside the workers; `stop()` kills them. */
export async function startCpuHogs(count: number, duty: number): Promise<{ stop(): Promise<void> }> {
  const hogs: FixtureProcess[] = Array.from({ length: count }, () =>
    startFixtureProcess('fleet-cpu-hog.ts', { duty, periodMs: 2_000 } satisfies FleetCpuHogConfig),
  );
  await Promise.all(hogs.map((hog) => hog.waitFor('ready')));
  return {
    async stop() {
      for (const hog of hogs) hog.child.kill('SIGKILL');
      await Promise.all(hogs.map((hog) => hog.exited));
    },
  };
}
