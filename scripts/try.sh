#!/usr/bin/env bash
# The main job on an embedded default, on a scratch tree: installs what it needs, shows what mesh-host
# sees on this machine, applies the example declaration onto a scratch --root, then applies it again
# to show the no-op. Nothing outside the scratch folder is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2

scratch=$(mktemp -d /tmp/mesh-host-try.XXXXXX)
mkdir -p "$scratch/root/etc" "$scratch/root/srv"
echo '{ "node": "example" }' > "$scratch/host.json"
flags=(--root "$scratch/root" --state-dir "$scratch/state" --config "$scratch/host.json" --log-level warn)

echo "== mesh-host inventory"
./bin/mesh-host inventory
echo
echo "== mesh-host apply fixtures/declarations/example.json (scratch root $scratch/root)"
./bin/mesh-host apply fixtures/declarations/example.json "${flags[@]}"
echo
echo "== the same again: nothing to do"
./bin/mesh-host apply fixtures/declarations/example.json "${flags[@]}"
echo
echo "== mesh-host status"
./bin/mesh-host status "${flags[@]}"
echo
echo "(scratch left in $scratch for a look; remove it with: rm -rf $scratch)"
