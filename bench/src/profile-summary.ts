import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { repoDir } from './machine.js';

/** Self time of the functions in a `.cpuprofile`, overall and in Lunation's own code. */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' } },
});
const top = Number(values.top);

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, index) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0));
  });
  let total = 0;
  const byFunction = new Map<string, { name: string; where: string; time: number; own: boolean }>();
  const byArea = new Map<string, number>();
  for (const [id, time] of self) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    total += time;
    const path = url.replace('file://', '').replace(`${repoDir}/`, '');
    const own = path.startsWith('packages/');
    // tsx-compiled modules report every function on line 1; show the line only when it means something.
    const where = path && lineNumber > 0 ? `${path}:${lineNumber + 1}` : path;
    const key = `${functionName}@${where}`;
    const entry = byFunction.get(key) ?? { name: functionName || '(anonymous)', where, time: 0, own };
    entry.time += time;
    byFunction.set(key, entry);
    const area = own
      ? path.split('/').slice(0, 2).join('/')
      : path.includes('node_modules')
        ? (/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ??
          'node_modules')
        : path.startsWith('node:') || !path
          ? functionName.startsWith('(')
            ? functionName
            : 'node internals'
          : 'other';
    byArea.set(area, (byArea.get(area) ?? 0) + time);
  }
  const percent = (time: number) => `${((time / total) * 100).toFixed(1).padStart(5)}%`;
  console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms sampled (idle excluded)\n\nBy area:`);
  for (const [area, time] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 15))
    console.log(`  ${percent(time)}  ${area}`);
  const sorted = [...byFunction.values()].sort((a, b) => b.time - a.time);
  console.log(`\nTop ${top} self time, Lunation code (packages/*):`);
  for (const entry of sorted.filter((item) => item.own).slice(0, top))
    console.log(`  ${percent(entry.time)}  ${entry.name}  ${entry.where}`);
  console.log(`\nTop ${top} self time, everything:`);
  for (const entry of sorted.slice(0, top))
    console.log(`  ${percent(entry.time)}  ${entry.name}  ${entry.where}`);
}
