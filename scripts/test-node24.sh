#!/usr/bin/env bash
# Runs `pnpm test` on Node.js 24 (installed by scripts/node24.sh) in this workspace.
#
# better-sqlite3: the lockfile's 12.x loads on Node 24 but aborts the process at exit there ("Assertion failed:
# (env) != nullptr" in node::RemoveEnvironmentCleanupHook: its node::ObjectWrap destructors run after Node has
# torn the environment down; fixed in better-sqlite3 13, which moved to N-API but needs Node >= 22). So for this run the workspace's better-sqlite3 is swapped for 13 (its prebuilt N-API module
# needs no compiler), the driver a Node 24 user should use; it is swapped back when the run ends.
# Usage: bash scripts/test-node24.sh [vitest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
node_dir=$(bash scripts/node24.sh)
export PATH="$node_dir/bin:$PATH"
# Anything compiled in this run compiles against Node 24's own headers (CI exports Node 22's for its other steps).
export npm_config_nodedir="$node_dir"
driver_version=13.2.0
cache="$PWD/.cache/better-sqlite3-$driver_version"
if [ ! -f "$cache/node_modules/better-sqlite3/package.json" ]; then
  mkdir -p "$cache"
  [ -f "$cache/package.json" ] || echo '{ "name": "better-sqlite3-for-node24", "private": true }' >"$cache/package.json"
  npm install --prefix "$cache" --no-save --no-audit --no-fund --loglevel=error "better-sqlite3@$driver_version" >&2
fi
node -e "new (require('$cache/node_modules/better-sqlite3'))(':memory:').close()"

installed=$(cd packages/store-sqlite/node_modules/better-sqlite3 && pwd -P)
aside="$installed.node22"
restore() {
  if [ -d "$aside" ]; then
    rm -f "$installed"
    mv "$aside" "$installed"
  fi
}
restore # an earlier run that was killed may have left the swap in place
trap restore EXIT INT TERM
mv "$installed" "$aside"
ln -s "$cache/node_modules/better-sqlite3" "$installed"
echo "Node.js $(node --version), better-sqlite3 $(node -p "require('$installed/package.json').version")"
pnpm test "$@"
