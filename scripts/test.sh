#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/setup-tests.sh, which runs scripts/setup.sh), then
# typecheck, lint, build and every test, real components included (they are started by the tests themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-tests.sh
npm test
