#!/usr/bin/env bash
# The main job on an embedded default: installs what it needs, then shows what mesh-host sees here.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >&2
./bin/mesh-host inventory
