#!/usr/bin/env bash
# Rehearses a release without publishing anywhere real:
#   1. `changeset version` on a scratch copy of the workspace (the built dist folders included), which turns the
#      pending changesets into versions and changelogs;
#   2. `pnpm publish` of every public package from that copy to a Verdaccio started here, on 127.0.0.1, that
#      serves @lunation/* only from itself and proxies every other package to the npm registry;
#   3. in clean projects outside the workspace, once with npm and once with pnpm, installs @lunation/runtime,
#      @lunation/store-postgres and @lunation/provider-openai from that registry by name and version, checks that
#      the installed versions are the released ones, compiles the runtime README's quick start and the PostgreSQL
#      store README's example with `tsc --strict`, and runs both (the quick start against a local
#      OpenAI-compatible server, the store example against $POSTGRES_URL), checking what they print.
# Usage: pnpm build && bash scripts/release-rehearsal.sh   (needs PostgreSQL at $POSTGRES_URL, as the tests do)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# Verdaccio 6.8 (pinned; it runs on Node 22 and 24, with node-fetch 2.7).
verdaccio_version=6.8.0
postgres_url=${POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}
work=$(mktemp -d "${TMPDIR:-/tmp}/lunation-release-XXXXXX")
registry_pid=
server_pid=
cleanup() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; fi
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
started=$(date +%s)
say() { printf '[%ss] %s\n' "$(($(date +%s) - started))" "$1"; }

say "installing Verdaccio $verdaccio_version (from the npm registry)"
mkdir -p "$work/registry"
cat >"$work/registry/package.json" <<EOF
{
  "name": "lunation-release-registry",
  "private": true,
  "dependencies": { "verdaccio": "$verdaccio_version" },
  "overrides": { "node-fetch": "2.7.0" }
}
EOF
(cd "$work/registry" && npm install --no-audit --no-fund --loglevel=error >/dev/null)

port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
registry="http://127.0.0.1:$port/"
uplink=$(npm config get registry)
cat >"$work/registry/config.yaml" <<EOF
storage: $work/registry/storage
auth:
  htpasswd:
    file: $work/registry/htpasswd
    max_users: 1
uplinks:
  npmjs:
    url: $uplink
    timeout: 60s
packages:
  # Ours are served from here only: nothing is looked up in, or could leak to, the real registry.
  '@lunation/*':
    access: \$all
    publish: \$authenticated
  '**':
    access: \$all
    publish: \$authenticated
    proxy: npmjs
log: { type: stdout, format: pretty, level: warn }
EOF
say "starting Verdaccio at $registry (other packages proxied to $uplink)"
node "$work/registry/node_modules/verdaccio/bin/verdaccio" --config "$work/registry/config.yaml" \
  --listen "127.0.0.1:$port" >"$work/registry/log.txt" 2>&1 &
registry_pid=$!
for _ in $(seq 1 100); do curl -fsS "${registry}-/ping" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fsS "${registry}-/ping" >/dev/null || { cat "$work/registry/log.txt" >&2; echo "Verdaccio did not start" >&2; exit 1; }
token=$(curl -fsS -X PUT -H 'content-type: application/json' \
  -d '{"name":"rehearsal","password":"rehearsal-password"}' \
  "${registry}-/user/org.couchdb.user:rehearsal" | node -pe 'JSON.parse(require("fs").readFileSync(0)).token')
[ -n "$token" ] && [ "$token" != undefined ] || { echo "could not sign up at Verdaccio" >&2; exit 1; }
npmrc="$work/npmrc"
printf 'registry=%s\n//127.0.0.1:%s/:_authToken=%s\n' "$registry" "$port" "$token" >"$npmrc"
export NPM_CONFIG_USERCONFIG="$npmrc" npm_config_userconfig="$npmrc"

say "changeset version on a scratch copy"
copy="$work/workspace"
mkdir -p "$copy"
tar -C "$root" --exclude=./.git --exclude=node_modules --exclude=.turbo --exclude=./apps/assistant/data \
  --exclude=./bench/results --exclude=./tests/docs/.examples -cf - . | tar -C "$copy" -xf -
(cd "$copy" && "$root/node_modules/.bin/changeset" version >/dev/null)
version=$(node -p "require('$copy/packages/runtime/package.json').version")
public_packages=()
for manifest in "$copy"/packages/*/package.json; do
  read -r name package_version private < <(node -p \
    "const p=require('$manifest'); [p.name, p.version, p.private === true].join(' ')")
  [ "$private" = true ] && continue
  public_packages+=("$name")
  if [ "$package_version" != "$version" ]; then
    echo "$name is $package_version after changeset version, @lunation/runtime $version: the packages are versioned together" >&2
    exit 1
  fi
  [ -s "$(dirname "$manifest")/CHANGELOG.md" ] || { echo "$name has no CHANGELOG.md" >&2; exit 1; }
done
[ "$(ls "$copy/.changeset" | grep -cv -e '^README.md$' -e '^config.json$' || true)" = 0 ] || {
  echo "changeset version left changesets behind" >&2
  exit 1
}
say "every public package (${#public_packages[@]}) is at $version"

say "pnpm publish of every package to the local registry"
# pnpm publish resolves `workspace:` ranges from the installed workspace: link it from pnpm's store, offline.
(cd "$copy" && pnpm install --frozen-lockfile --offline --ignore-scripts --filter './packages/*' \
  --reporter=silent >"$work/install.txt" 2>&1) || { cat "$work/install.txt" >&2; exit 1; }
(cd "$copy" && pnpm -r --filter './packages/*' publish --no-git-checks --registry "$registry" >"$work/publish.txt" 2>&1) || {
  cat "$work/publish.txt" >&2
  exit 1
}
for name in "${public_packages[@]}"; do
  published=$(npm view "$name@$version" version --registry "$registry")
  [ "$published" = "$version" ] || { echo "$name@$version is not in the registry" >&2; exit 1; }
  # `workspace:` ranges were rewritten to real versions.
  if npm view "$name@$version" dependencies --json --registry "$registry" | grep -q 'workspace:'; then
    echo "$name@$version was published with a workspace: dependency" >&2
    exit 1
  fi
done

readme_block() { # <file> <heading> <fence>: the first block with that fence after the heading
  awk -v heading="$2" -v fence="$3" 'index($0, heading) == 1 {f=1} f && $0==fence {c=1; next} c && /^```/ {exit} c {print}' "$1"
}
mkdir -p "$work/examples"
readme_block "$root/packages/runtime/README.md" '## Quick start' '```ts' >"$work/examples/quick-start.ts"
readme_block "$root/packages/runtime/README.md" '## Quick start' '```text output' >"$work/examples/quick-start.txt"
readme_block "$root/packages/store-postgres/README.md" '## Example' '```ts' >"$work/examples/postgres-store.ts"
readme_block "$root/packages/store-postgres/README.md" '## Example' '```text output' >"$work/examples/postgres-store.txt"
for file in "$work"/examples/*; do [ -s "$file" ] || { echo "no README example for $file" >&2; exit 1; }; done

say "starting the quick start's local OpenAI-compatible server"
mkfifo "$work/server-in"
node --import tsx tests/docs/src/serve-quick-start.ts <"$work/server-in" >"$work/server-url" &
server_pid=$!
exec 3>"$work/server-in"
for _ in $(seq 1 100); do [ -s "$work/server-url" ] && break; sleep 0.1; done
base_url=$(head -n 1 "$work/server-url")
[ -n "$base_url" ] || { echo "the quick start's server did not start" >&2; exit 1; }

typescript_version=$(node -p "require('$root/node_modules/typescript/package.json').version")
zod_version=$(node -p "require('$root/packages/runtime/node_modules/zod/package.json').version")
wanted=("@lunation/runtime@$version" "@lunation/store-postgres@$version" "@lunation/provider-openai@$version")
tools=("zod@^$zod_version" "typescript@$typescript_version" "@types/node@^22.12")

# Installs with <client> in a new project, then compiles and runs the two examples there.
consumer() {
  local client=$1 project="$work/consumer-$1"
  mkdir -p "$project"
  printf '{ "name": "lunation-release-%s", "private": true, "type": "module" }\n' "$client" >"$project/package.json"
  say "$client: installing ${wanted[*]} from the local registry"
  if [ "$client" = npm ]; then
    (cd "$project" && npm install --no-audit --no-fund --loglevel=error "${wanted[@]}" "${tools[@]}")
  else
    (cd "$project" && pnpm add --registry "$registry" --reporter=silent "${wanted[@]}" "${tools[@]}")
  fi
  for package in runtime store-postgres provider-openai contract; do
    local installed
    installed=$(cd "$project" && node -p "require('@lunation/$package/package.json').version" 2>/dev/null ||
      node -p "require('$project/node_modules/.pnpm/node_modules/@lunation/$package/package.json').version")
    [ "$installed" = "$version" ] || { echo "$client installed @lunation/$package $installed, not $version" >&2; exit 1; }
  done
  cp "$work/examples/quick-start.ts" "$work/examples/postgres-store.ts" "$project/"
  say "$client: tsc --strict on the quick start and the PostgreSQL store example"
  (cd "$project" && npx tsc --strict --module nodenext --moduleResolution nodenext --target es2023 \
    --types node quick-start.ts postgres-store.ts)
  say "$client: running them"
  (cd "$project" && OPENAI_API_KEY=test-key OPENAI_BASE_URL="$base_url" timeout 60 node quick-start.js) \
    >"$project/quick-start.out"
  diff -u "$work/examples/quick-start.txt" "$project/quick-start.out"
  (cd "$project" && DATABASE_URL="$postgres_url" timeout 60 node postgres-store.js) >"$project/postgres-store.out"
  diff -u "$work/examples/postgres-store.txt" "$project/postgres-store.out"
}
consumer npm
consumer pnpm
exec 3>&-
say "release rehearsal passed: ${#public_packages[@]} packages at $version, installed by name and version with npm and pnpm"
