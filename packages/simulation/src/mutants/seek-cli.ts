// The mutation campaign's child: runs one world's seeds from 1 (as `pnpm simulate --seeds N` does: the same world
// functions and fault profiles) until the first seed with a violation, and ends with one `@@simulate-result {json}`
// line. `node --conditions=@lunation/source --import tsx src/mutants/seek-cli.ts --seeds N --world W --faults F`
import { parseArgs } from 'node:util';
import { type FaultProfile, faultProfiles } from '../fault-profiles.js';
import { runInboxWorld, type WorldReport } from '../inbox-world.js';
import { runRuntimeWorld } from '../runtime-world.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    seeds: { type: 'string', default: '5000' },
    world: { type: 'string', default: 'runtime' },
    faults: { type: 'string', default: 'all' },
  },
});
const world = values.world;
if (world !== 'runtime' && world !== 'inbox')
  throw new Error(`--world must be runtime or inbox, got ${world}`);
const profileName = values.faults as FaultProfile;
if (!(profileName in faultProfiles))
  throw new Error(`--faults must be one of ${Object.keys(faultProfiles).join(', ')}`);
const profile = faultProfiles[profileName];
const run = (seed: number): Promise<WorldReport> =>
  world === 'runtime'
    ? runRuntimeWorld({ seed, trace: false, ...profile.runtime })
    : runInboxWorld({ seed, trace: false, ...profile.inbox });

let first: { seed: number; violation: string } | undefined;
let seedsRun = 0;
for (let seed = 1; seed <= Number(values.seeds); seed++) {
  seedsRun++;
  try {
    const report = await run(seed);
    if (report.violations.length > 0) first = { seed, violation: report.violations[0]! };
  } catch (error) {
    // A world that throws is broken by what it runs: a violation of its own kind.
    first = { seed, violation: `the world threw: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (first) {
    console.log(
      `seed ${seed}: ${first.violation}\n  replay: pnpm simulate --seed ${seed} --world ${world} --faults ${profileName}`,
    );
    break;
  }
}
console.log(
  `@@simulate-result ${JSON.stringify({ seed: first?.seed, seedsRun, violation: first?.violation })}`,
);
// Workers that crashed mid-run leave the runtime's real timers behind: end here.
process.exit(0);
