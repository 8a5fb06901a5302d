#!/bin/bash
# The status bench of two builds, interleaved (A B A B), for a before/after in one run:
#   flock /work/bench.lock bench/status-ab.sh BEFORE_TREE [ROUNDS]
# BEFORE_TREE is a built copy of the older commit (git archive COMMIT | tar -x -C DIR; node_modules; npm run build).
# Each run's "Status while applying" section is kept in $OUT (default /tmp/status-ab) as ROUND-before.md / ROUND-after.md.
set -euo pipefail
before=$1
rounds=${2:-2}
after=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/status-ab}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for which in before after; do
    dir=$before
    [ "$which" = after ] && dir=$after
    cp "$dir/docs/bench.md" "$out/bench.md.keep"
    echo "== round $round, $which: $(uptime)" | tee -a "$out/log"
    (cd "$dir" && node dist/bench/run.js status >/dev/null)
    sed -n '/^## Status while applying/,/^## [^S]/p' "$dir/docs/bench.md" | sed '$d' > "$out/$round-$which.md"
    cp "$out/bench.md.keep" "$dir/docs/bench.md"
  done
done
grep -H -E 'from the put to its report|^\| status round trip, p99|status during it' "$out"/*-*.md
