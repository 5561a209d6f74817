#!/bin/sh
# Instructions per call under callgrind, for each contender and path:
#   benches/instructions.sh [calls]        (default 2000)
#   CONTENDERS="hand attribute" benches/instructions.sh 1000   (only those)
# Builds benches/benches/instructions.rs in release, runs it once per
# contender and path under `valgrind --tool=callgrind`, counting only inside
# its `measure_*` functions, and prints a Markdown table.
set -eu
calls=${1:-2000}
cd "$(dirname "$0")/.."
bin=$(cargo bench -p retry-benches --bench instructions --no-run --message-format=json 2>/dev/null \
    | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
[ -x "$bin" ] || { echo "no bench binary" >&2; exit 1; }
out=$(mktemp -d)
per_call() {
    valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
        --toggle-collect='*measure_*' "$bin" "$1" "$2" "$calls" >/dev/null 2>&1
    total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$out/cg")
    echo "$total $calls" | awk '{ printf "%.1f", $1 / $2 }'
}
echo "| contender | success path, instructions/call | three failures, instructions/call |"
echo "|---|---|---|"
for contender in ${CONTENDERS:-dependency hand attribute closure backon attribute-breaker hand-deadline attribute-deadline}; do
    echo "| $contender | $(per_call "$contender" success) | $(per_call "$contender" failures) |"
done
rm -rf "$out"
