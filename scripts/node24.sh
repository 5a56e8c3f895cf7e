#!/usr/bin/env bash
# Installs Node.js 24 from the npm registry's `node` package into .cache/node24 (once) and prints the folder
# that holds its bin/ and include/node (see scripts/install-node.sh).
# Usage: node_dir=$(bash scripts/node24.sh); PATH="$node_dir/bin:$PATH" node --version
set -euo pipefail
exec bash "$(dirname "$0")/install-node.sh" 24
