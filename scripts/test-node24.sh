#!/usr/bin/env bash
# Runs `pnpm test` on Node.js 24 (installed by scripts/node24.sh) in this workspace. better-sqlite3's native
# module is compiled for Node 24's ABI once (kept in .cache/), swapped in for the run and swapped back after,
# so the workspace keeps working on the Node.js it was installed with.
# Usage: bash scripts/test-node24.sh [vitest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
node_dir=$(bash scripts/node24.sh)
node24="$node_dir/bin/node"
driver=$(cd packages/store-sqlite/node_modules/better-sqlite3 && pwd -P)
version=$(node -p "require('$driver/package.json').version")
abi=$("$node24" -p process.versions.modules)
cached="$PWD/.cache/better-sqlite3-$version-abi$abi.node"

if [ ! -f "$cached" ]; then
  echo "compiling better-sqlite3 $version for Node.js $("$node24" --version) (ABI $abi)"
  scratch=$(mktemp -d)
  cp -r "$driver/binding.gyp" "$driver/deps" "$driver/src" "$driver/package.json" "$scratch/"
  node_gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
  if ! (cd "$scratch" && "$node24" "$node_gyp" rebuild --release --nodedir="$node_dir" -j 2 >build.log 2>&1); then
    tail -40 "$scratch/build.log" >&2
    rm -rf "$scratch"
    exit 1
  fi
  mkdir -p .cache
  cp "$scratch/build/Release/better_sqlite3.node" "$cached"
  rm -rf "$scratch"
fi

release="$driver/build/Release/better_sqlite3.node"
saved=$(mktemp)
cp "$release" "$saved"
# --remove-destination: the installed file may be a hard link into pnpm's store, which must not change.
restore() { cp --remove-destination "$saved" "$release" && rm -f "$saved"; }
trap restore EXIT
cp --remove-destination "$cached" "$release"
PATH="$node_dir/bin:$PATH" node --version
PATH="$node_dir/bin:$PATH" pnpm test "$@"
