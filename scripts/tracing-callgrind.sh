#!/usr/bin/env bash
# Instruction counts of W1 (S = 10) with tracing off, on (every run) and sampled (10 %), under valgrind's callgrind
# (see bench/tracing-notes.md). One process per variant, side by side (a count does not depend on the load): each
# warms up, then runs windows of runs, and callgrind dumps its counters at each window's edge, so every window is
# counted alone (start-up and warm-up in none). Prints instructions per step per window and the added share.
#
# Usage: scripts/tracing-callgrind.sh [store=none] [warmup=300] [windows=300,300,300] [variants=off,on,sampled]
# A variant is off, on, sampled or lean (every run, toolSpans: { minDurationMs: 5 }), optionally with `@<dir>`: @lunation/otel loaded from that build's dist/ (relative
# to bench/), e.g. `on@.cache/otel-base/dist` beside `on` to count two builds of it.
# Lunation loads from its built dist/ (run `pnpm build` first); the harness is compiled to bench/.cache first
# (tsc, into a directory of its own under bench/.cache), so that no TypeScript loader runs under valgrind (it would triple the start-up). Needs Node >= 22.
set -euo pipefail
store=${1:-none}
warmup=${2:-300}
windows=${3:-300,300,300}
variants=${4:-off,on,sampled}
cd "$(dirname "$0")/../bench"
major=$(node -p 'process.versions.node.split(".")[0]')
if ((major < 22)); then
  echo "Node $(node -v) is on the PATH; these counts are of Node 22 or later (source /tmp/env.sh or nvm use 22)" >&2
  exit 1
fi
mkdir -p .cache
js=$(mktemp -d -p .cache js.XXXXXX)
npx tsc -p tsconfig.json --noEmit false --declaration false --declarationMap false --sourceMap false --outDir "$js"
out=$(mktemp -d)
echo "callgrind files and logs in $out ($(node -v))" >&2
for variant in ${variants//,/ }; do
  tracing=${variant%%@*}
  otel=()
  [[ $variant == *@* ]] && otel=(--otel "${variant#*@}")
  name=${variant//[^a-zA-Z0-9]/_}
  # A run under callgrind is some 50 times slower: a 10-minute lease keeps it from outliving its lease.
  valgrind --tool=callgrind --dump-before=uv_os_getpriority --callgrind-out-file="$out/callgrind.$name" \
    node --single-threaded "$js/tracing/w1-callgrind.js" --store "$store" --tracing "$tracing" \
    --warmup "$warmup" --windows "$windows" --lease-ttl-ms 600000 "${otel[@]}" \
    >"$out/result.$name.json" 2>"$out/valgrind.$name.log" &
done
wait
count=$(awk -F, '{print NF}' <<<"$windows")
for variant in ${variants//,/ }; do
  name=${variant//[^a-zA-Z0-9]/_}
  if ! grep -q '"windows"' "$out/result.$name.json"; then
    echo "variant $variant failed:" >&2
    tail -n 20 "$out/valgrind.$name.log" >&2
    exit 1
  fi
  # Dump 1: start-up and warm-up; dump k + 1: window k.
  totals=""
  for ((k = 2; k <= count + 1; k++)); do
    totals+="$(grep -m1 -E '^(totals|summary):' "$out/callgrind.$name.$k" | awk '{print $2}'),"
  done
  echo "$variant ${totals%,}"
done | node -e '
const [store, windows] = process.argv.slice(1);
const runs = windows.split(",").map(Number);
const rows = require("node:fs").readFileSync(0, "utf8").trim().split("\n").map((line) => {
  const [variant, totals] = line.split(" ");
  return { variant, perStep: totals.split(",").map((n, i) => Number(n) / (runs[i] * 10)) };
});
const off = rows.find((row) => row.variant === "off");
for (const { variant, perStep } of rows) {
  const cells = perStep.map((value, i) => {
    const added = off && variant !== "off" ? ` (${value >= off.perStep[i] ? "+" : ""}${(((value - off.perStep[i]) / off.perStep[i]) * 100).toFixed(1)} %)` : "";
    return `${(value / 1000).toFixed(1)} k${added}`;
  });
  const sum = perStep.reduce((a, b) => a + b, 0);
  const all = off && variant !== "off" ? ` (${(((sum - off.perStep.reduce((a, b) => a + b, 0)) / off.perStep.reduce((a, b) => a + b, 0)) * 100).toFixed(1)} % over all windows)` : "";
  console.log(`W1 ${store}, tracing ${variant}: instructions per step by window: ${cells.join(", ")}${all}`);
}
' "$store" "$windows"
