// `pnpm --filter @lunation/simulation seams`: the call sites the Clock / IdSource wiring has left to do.
//   (no flag)  prints them as a markdown list, by package and file
//   --write    rewrites seam-allow-list.ts from the code, refusing if any rule's total grew
//   --accept-growth  with --write: accepts growth once (code merged from branches written before the rule)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { seamAllowList } from './seam-allow-list.js';
import { countSeams, ruleTotals, scanSeams } from './seam-scan.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const sites = scanSeams(root);

if (process.argv.includes('--write')) {
  const counts = countSeams(sites);
  const before = ruleTotals(seamAllowList);
  const grown = [...ruleTotals(counts)].filter(([rule, total]) => total > (before.get(rule) ?? 0));
  if (grown.length > 0 && !process.argv.includes('--accept-growth')) {
    console.error(
      `Refusing to grow the allow-list: ${grown.map(([rule, total]) => `${rule} ${before.get(rule) ?? 0} -> ${total}`).join(', ')}. Take a Clock / IdSource instead.`,
    );
    process.exit(1);
  }
  const body = JSON.stringify(counts, null, 2).replace(/"([A-Za-z.() ]+)": /g, (match, key: string) =>
    /^[A-Za-z]+$/.test(key) ? `${key}: ` : match,
  );
  const file = fileURLToPath(new URL('./seam-allow-list.ts', import.meta.url));
  writeFileSync(
    file,
    `import type { SeamCounts } from './seam-scan.js';\n\n/**\n * The call sites of host time, timers and randomness that the Clock / IdSource wiring has not reached yet, counted\n * by file and rule. It may only shrink: \`seams.test.ts\` fails on a new site, and on a site removed without\n * shrinking this list (\`pnpm --filter @lunation/simulation seams --write\` rewrites it, refusing any growth).\n */\nexport const seamAllowList: SeamCounts = ${body};\n`,
  );
  execFileSync('pnpm', ['exec', 'biome', 'format', '--write', file], { cwd: root, stdio: 'ignore' });
  console.log(`Wrote ${sites.length} sites in ${Object.keys(counts).length} files.`);
} else {
  let current = '';
  for (const site of sites) {
    if (site.file !== current) {
      current = site.file;
      console.log(`\n- \`${site.file}\``);
    }
    console.log(`  - ${site.line}: \`${site.rule}\` — \`${site.text.replace(/`/g, "'")}\``);
  }
  const totals = [...ruleTotals(countSeams(sites))].map(([rule, total]) => `${rule} ${total}`).join(', ');
  console.log(`\n${sites.length} sites: ${totals}`);
}
