#!/usr/bin/env bash
# Installs the packages as a user outside this workspace would: packs every package (after `pnpm build`),
# installs all tarballs together with npm into a temporary project, compiles the runtime README's quick start
# with `tsc --strict` against the installed types and runs it against a local OpenAI-compatible server,
# checking that it prints what the README shows. Compiles the README examples that import drivers themselves
# (better-sqlite3, pg, the AI SDK) under `tsc --strict` with skipLibCheck off: they fail without the @types
# packages the READMEs name and compile with them. Then checks the packed SQLite store: with better-sqlite3's
# install script skipped it must fail with the error that names the fix, and with the driver built it works.
# Usage: pnpm build && bash scripts/check-install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/lunation-install-XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "packing into $work/tarballs"
pnpm --silent -r --filter './packages/*' pack --pack-destination "$work/tarballs" >/dev/null
ls "$work/tarballs"

driver="$root/packages/store-sqlite/node_modules/better-sqlite3"
version_of() { node -p "require('$1/package.json').version"; }
project="$work/project"
mkdir -p "$project"
echo '{ "name": "lunation-install-check", "private": true, "type": "module" }' >"$project/package.json"
# --ignore-scripts: what a package manager that skips dependency builds does (pnpm 10 by default).
(cd "$project" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  "$work"/tarballs/*.tgz zod "typescript@$(version_of "$root/node_modules/typescript")" "@types/node@^22.12" \
  "better-sqlite3@$(version_of "$driver")")
if [ -d "$project/node_modules/@lunation/runtime/node_modules/@lunation" ]; then
  echo "npm installed a second copy of a @lunation package under @lunation/runtime" >&2
  exit 1
fi

readme="$root/packages/runtime/README.md"
block() { awk -v fence="$1" '/^## Quick start/{f=1} f && $0==fence{c=1; next} c && /^```/{exit} c{print}' "$readme"; }
block '```ts' >"$project/quick-start.ts"
block '```text output' >"$work/expected.txt"
[ -s "$project/quick-start.ts" ] && [ -s "$work/expected.txt" ] || { echo "no quick start in $readme" >&2; exit 1; }
echo "compiling the quick start (tsc --strict)"
(cd "$project" && npx tsc --strict --module nodenext --moduleResolution nodenext --target es2023 \
  --types node quick-start.ts)

echo "running the quick start against a local OpenAI-compatible server"
mkfifo "$work/server-in"
node --import tsx tests/docs/src/serve-quick-start.ts <"$work/server-in" >"$work/server-url" &
server_pid=$!
exec 3>"$work/server-in"
for _ in $(seq 1 100); do [ -s "$work/server-url" ] && break; sleep 0.1; done
base_url=$(head -n 1 "$work/server-url")
[ -n "$base_url" ] || { echo "the quick start's server did not start" >&2; exit 1; }
(cd "$project" && OPENAI_API_KEY=test-key OPENAI_BASE_URL="$base_url" timeout 60 node quick-start.js) \
  >"$work/actual.txt"
exec 3>&-
diff -u "$work/expected.txt" "$work/actual.txt"
echo "the quick start printed what the README shows"

echo "compiling the README examples that bring their own drivers (tsc --strict, skipLibCheck off)"
# A README example under `# <file> <heading> <n>`: the n-th ```ts block (any info string) after the heading.
readme_block() {
  node -e '
    const [file, heading, n] = process.argv.slice(1);
    const lines = require("fs").readFileSync(file, "utf8").split("\n");
    let seen = false, count = 0, inside = false; const out = [];
    for (const line of lines) {
      if (!seen) { seen = line.startsWith(heading); continue; }
      if (!inside && /^```ts\b/.test(line)) { count++; inside = count === Number(n); continue; }
      if (inside && line.startsWith("```")) { process.stdout.write(out.join("\n") + "\n"); process.exit(0); }
      if (inside) out.push(line);
    }
    console.error(`no block ${n} after "${heading}" in ${file}`); process.exit(1);
  ' "$@"
}
types_dir="$project/readme-types"
mkdir -p "$types_dir"
readme_block "$root/packages/store-sqlite/README.md" '### With Kysely' 1 >"$types_dir/sqlite-kysely.ts"
readme_block "$root/packages/store-postgres/README.md" 'The options are typed' 1 >"$types_dir/postgres-pool.ts"
readme_block "$root/packages/provider-ai-sdk/README.md" '## ' 1 >"$types_dir/ai-sdk-quick.ts"
readme_block "$root/packages/provider-ai-sdk/README.md" '## ' 2 >"$types_dir/ai-sdk-options.ts"
readme_block "$root/packages/provider-ai-sdk/README.md" '## ' 3 >"$types_dir/ai-sdk-structured.ts"
ai_sdk="$root/packages/provider-ai-sdk/node_modules"
(cd "$project" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  "kysely@$(version_of "$root/packages/store-sqlite/node_modules/kysely")" \
  "pg@$(version_of "$root/packages/store-postgres/node_modules/pg")" \
  "ai@$(version_of "$ai_sdk/ai")" \
  "@ai-sdk/openai@$(version_of "$ai_sdk/@ai-sdk/openai")" \
  "@ai-sdk/anthropic@$(version_of "$ai_sdk/@ai-sdk/anthropic")")
compile_types() {
  (cd "$types_dir" && npx tsc --strict --noEmit --skipLibCheck false --module nodenext \
    --moduleResolution nodenext --target es2023 --types node ./*.ts)
}
# What the READMEs say: without these type packages the examples do not compile...
if compile_types >"$work/types-before.txt" 2>&1; then
  echo "the README examples compiled without @types/better-sqlite3, @types/pg and @types/json-schema:" >&2
  echo "the READMEs' note on type packages is out of date" >&2
  exit 1
fi
for module in better-sqlite3 pg json-schema; do
  grep -q "declaration file for module '$module'\|Cannot find module '$module'" "$work/types-before.txt" || {
    echo "expected a missing-types error for '$module'; tsc said:" >&2
    cat "$work/types-before.txt" >&2
    exit 1
  }
done
# ...and with them they do.
(cd "$project" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error \
  "@types/better-sqlite3@$(version_of "$root/packages/store-sqlite/node_modules/@types/better-sqlite3")" \
  "@types/pg@$(version_of "$root/packages/store-postgres/node_modules/@types/pg")" \
  "@types/json-schema@^7.0.15")
compile_types
echo "the README examples compile under tsc --strict with the type packages the READMEs name"

cat >"$project/open-sqlite.mjs" <<'EOF'
import { SqliteStore } from '@lunation/store-sqlite';
try {
  const store = await SqliteStore.open({ path: 'check.db' });
  await store.createThread({ id: 't1' });
  console.log(`opened: ${(await store.getThread('t1'))?.id}`);
  await store.close();
} catch (error) {
  console.log(`${error.code}: ${error.message}`);
}
EOF
echo "opening a SqliteStore without better-sqlite3's native build"
sqlite_error=$(cd "$project" && node open-sqlite.mjs)
echo "$sqlite_error"
case "$sqlite_error" in
  "store-unavailable: better-sqlite3's native module was never built"*"npm rebuild better-sqlite3"*) ;;
  *) echo "expected the error that names the fix" >&2; exit 1 ;;
esac
# The same better-sqlite3 version as the workspace's, whose compiled module fits this Node.js: copying it in
# stands for `npm rebuild better-sqlite3` without compiling SQLite a second time.
mkdir -p "$project/node_modules/better-sqlite3/build/Release"
cp "$driver/build/Release/better_sqlite3.node" \
  "$project/node_modules/better-sqlite3/build/Release/"
opened=$(cd "$project" && node open-sqlite.mjs)
echo "$opened"
[ "$opened" = "opened: t1" ] || { echo "the packed SqliteStore did not work with the driver built" >&2; exit 1; }
echo "install check passed"
