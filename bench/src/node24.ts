import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchDir, LUNATION_PACKAGES, repoDir } from './machine.js';

/** Where the Node 24 run is installed (git-ignored): the peers' current releases and Lunation's packed dist/. */
export const node24Dir = join(benchDir, '.node24');

export interface Node24Install {
  /** The Node 24 binary. */
  node: string;
  /** The install: package.json, node_modules and a copy of bench/src. */
  dir: string;
}

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

/**
 * Prepares the Node 24 run: Node 24 from the npm registry (scripts/node24.sh), each Lunation package packed from
 * its built dist/ (`pnpm pack`, as it would be published), and bench/node24/package.json's current peer releases
 * installed with npm on Node 24 beside those tarballs, so npm picks the dependencies a user on Node 24 gets
 * (better-sqlite3 13 for SqliteStore). The bench's sources are copied in and type-checked against that install.
 */
export function prepareNode24(log: (line: string) => void): Node24Install {
  const nodeDir = run('bash', [join(repoDir, 'scripts/node24.sh')], repoDir).trim();
  const node = join(nodeDir, 'bin/node');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(nodeDir, 'bin')}:${process.env.PATH ?? ''}`,
  };
  delete env.NODE_OPTIONS;
  const packs = join(node24Dir, 'packs');
  rmSync(packs, { recursive: true, force: true });
  mkdirSync(packs, { recursive: true });
  const manifest = JSON.parse(readFileSync(join(benchDir, 'node24/package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const name of LUNATION_PACKAGES) {
    const packageDir = join(repoDir, 'packages', name.replace('@lunation/', ''));
    if (!existsSync(join(packageDir, 'dist/index.js')))
      throw new Error(`${name} has no dist/; build first (pnpm bench builds)`);
    run('pnpm', ['pack', '--pack-destination', packs], packageDir);
  }
  for (const file of readdirSync(packs)) {
    const name = `@lunation/${file.replace(/^lunation-/, '').replace(/-\d+\.\d+\.\d+.*\.tgz$/, '')}`;
    manifest.dependencies[name] = `file:packs/${file}`;
  }
  writeFileSync(join(node24Dir, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  rmSync(join(node24Dir, 'src'), { recursive: true, force: true });
  // W4 (src/workloads/w4*.ts), W5 (src/w5/), the MCP latency bench (src/mcp/) and the tracing overhead
  // (src/tracing/) are commands of their own with their own dependencies (the SDK; a worker fleet on BullMQ; the
  // MCP SDK; OpenTelemetry); this run does not include them.
  cpSync(join(benchDir, 'src'), join(node24Dir, 'src'), {
    recursive: true,
    filter: (source) => !/\/workloads\/w4[^/]*\.ts$/.test(source) && !/\/(w5|mcp|tracing)(\/|$)/.test(source),
  });
  writeFileSync(
    join(node24Dir, 'tsconfig.json'),
    `${JSON.stringify({ extends: '../../tsconfig.base.json', compilerOptions: { noEmit: true, types: ['node'], customConditions: [] }, include: ['src'] }, null, 2)}\n`,
  );
  // The tarballs keep their names (version 0.0.0) from build to build: without this, npm keeps the Lunation it
  // installed last time and the run would measure stale code.
  forgetInstalledLunation();
  log(`  npm install in ${node24Dir} (Node ${run(node, ['--version'], repoDir).trim()})`);
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], node24Dir, env);
  checkInstalledLunation();
  log('  type-checking the harnesses against the Node 24 install');
  run(node, [join(node24Dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], node24Dir, env);
  return { node, dir: node24Dir };
}

/** Drops the installed Lunation packages and their lockfile entries, so npm installs the fresh tarballs. */
function forgetInstalledLunation(): void {
  rmSync(join(node24Dir, 'node_modules/@lunation'), { recursive: true, force: true });
  const lockFile = join(node24Dir, 'package-lock.json');
  if (!existsSync(lockFile)) return;
  const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { packages?: Record<string, unknown> };
  for (const key of Object.keys(lock.packages ?? {})) {
    if (key.startsWith('node_modules/@lunation/') || key.startsWith('packs/')) delete lock.packages?.[key];
  }
  writeFileSync(lockFile, `${JSON.stringify(lock, null, 2)}\n`);
}

/** Every file of each package's built dist/ must be installed exactly: the run measures the code of this commit. */
function checkInstalledLunation(): void {
  for (const name of LUNATION_PACKAGES) {
    const built = join(repoDir, 'packages', name.replace('@lunation/', ''), 'dist');
    const installed = join(node24Dir, 'node_modules', name, 'dist');
    for (const file of readdirSync(built, { recursive: true }) as string[]) {
      if (!file.endsWith('.js')) continue;
      const there = join(installed, file);
      if (!existsSync(there) || !readFileSync(there).equals(readFileSync(join(built, file)))) {
        throw new Error(
          `The Node 24 install of ${name} has a stale or missing dist/${file}; delete ${node24Dir}`,
        );
      }
    }
  }
}
