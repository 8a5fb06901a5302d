#!/usr/bin/env bash
# Every test file, in two vitests at once: the power cuts in a real guest kernel (the project `guest`:
# a guest built from Debian's packages, a minute or two of fetching on a fresh clone, then some ten boots
# of an emulated machine) in one of its own, started first, and the rest (the projects `unit` and `real`,
# on their two workers) beside it. In the suite's own vitest the guest's minutes would hold one of its two
# workers, most of them waiting on the emulator; after the suite they would add every one to CI. The
# guest's output is printed when both have ended; the status is a failure if either failed.
set -uo pipefail
cd "$(dirname "$0")/.."
log=$(mktemp /tmp/mesh-host-guest-tests.XXXXXX)
npx vitest run --project guest >"$log" 2>&1 &
guest=$!
npx vitest run --project unit --project real
suite=$?
wait "$guest"
cuts=$?
echo "--- the power cuts in a real guest kernel (the project guest, run beside the rest):"
cat "$log"
rm -f "$log"
[ "$suite" -eq 0 ] && [ "$cuts" -eq 0 ]
