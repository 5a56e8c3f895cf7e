#!/usr/bin/env bash
# Instruction counts of W1 (S = 10) with tracing off and on, under valgrind's callgrind (see
# bench/tracing-notes.md). Each variant runs twice, with $LOW and $HIGH runs; the figure is the difference in
# instructions divided by the steps in between, so start-up cancels out. Lunation loads from its built dist/
# (run `pnpm build` first). Usage: scripts/tracing-callgrind.sh [store=sqlite] [low=300] [high=1300]
set -euo pipefail
store=${1:-sqlite}
low=${2:-300}
high=${3:-1300}
cd "$(dirname "$0")/../bench"
out=$(mktemp -d)
echo "callgrind files and logs in $out" >&2
# The four processes run side by side: instruction counts do not depend on the machine's load.
for tracing in off on; do
  for runs in "$low" "$high"; do
    valgrind --tool=callgrind --smc-check=all-non-file --callgrind-out-file="$out/callgrind.$tracing.$runs" \
      node --single-threaded --import tsx src/tracing/w1-callgrind.ts \
      --store "$store" --tracing "$tracing" --runs "$runs" >"$out/result.$tracing.$runs.json" \
      2>"$out/valgrind.$tracing.$runs.log" &
  done
done
wait
declare -A instructions
for tracing in off on; do
  for runs in "$low" "$high"; do
    if ! tail -n 1 "$out/result.$tracing.$runs.json" | grep -q '"runs"'; then
      echo "tracing $tracing, $runs runs failed:" >&2
      tail -n 20 "$out/valgrind.$tracing.$runs.log" >&2
      exit 1
    fi
    tail -n 1 "$out/result.$tracing.$runs.json"
    instructions[$tracing.$runs]=$(grep -m1 '^summary:' "$out/callgrind.$tracing.$runs" | awk '{print $2}')
  done
done
steps=$(( (high - low) * 10 ))
node -e '
const [store, low, high, steps, offLow, offHigh, onLow, onHigh] = process.argv.slice(1).map((v, i) => (i ? Number(v) : v));
const off = (offHigh - offLow) / steps / 1000;
const on = (onHigh - onLow) / steps / 1000;
console.log(`${store} ${low} -> ${high} runs: off ${off.toFixed(0)} k instr/step, on ${on.toFixed(0)} (+${(on - off).toFixed(0)}, +${(((on - off) / off) * 100).toFixed(1)} %)`);
' "$store" "$low" "$high" "$steps" "${instructions[off.$low]}" "${instructions[off.$high]}" "${instructions[on.$low]}" "${instructions[on.$high]}"
