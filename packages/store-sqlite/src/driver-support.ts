import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** better-sqlite3's version, read from the package the store loads. */
export function driverVersion(): string | undefined {
  try {
    const main = createRequire(import.meta.url).resolve('better-sqlite3');
    for (let dir = dirname(main); dir !== dirname(dir); dir = dirname(dir)) {
      try {
        const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
          name?: string;
          version?: string;
        };
        if (manifest.name === 'better-sqlite3') return manifest.version;
      } catch {
        // No package.json at this level.
      }
    }
  } catch {
    // Resolution failed; the import of better-sqlite3 itself reports that.
  }
  return undefined;
}

function parts(version: string): [number, number] {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return [major, minor];
}

/**
 * Why this better-sqlite3 cannot be used on this Node, or undefined. 12 and older wrap their objects in Node's
 * `node::ObjectWrap`, which since Node 24.19 registers an environment cleanup hook per object; built against those
 * headers, a `Database` or `Statement` that the garbage collector frees at a moment without a current Node
 * environment fails `CHECK(env != nullptr)` in `node::RemoveEnvironmentCleanupHook` and aborts the process
 * (nodejs/node#65446). 13 uses Node-API instead, but needs Node 22 and crashes on Node 20.
 */
export function driverProblem(driver: string, node: string): string | undefined {
  const [driverMajor] = parts(driver);
  const [nodeMajor, nodeMinor] = parts(node);
  if (driverMajor >= 13 && nodeMajor < 22) {
    return `better-sqlite3 ${driver} needs Node 22 or later and crashes on Node ${node}; install better-sqlite3 12 (npm install better-sqlite3@12)`;
  }
  if (driverMajor <= 12 && (nodeMajor > 24 || (nodeMajor === 24 && nodeMinor >= 19))) {
    return `better-sqlite3 ${driver} can abort the process on Node ${node} (a garbage-collected statement fails an assertion in node::RemoveEnvironmentCleanupHook, nodejs/node#65446); install better-sqlite3 13 (npm install better-sqlite3@13)`;
  }
  return undefined;
}
