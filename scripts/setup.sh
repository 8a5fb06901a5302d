#!/usr/bin/env bash
# What README's first command (scripts/try.sh) needs, and nothing more, on a fresh Debian machine, as root:
# nats-server (the mesh's server the demo starts on loopback), busybox-static (the one binary of the image
# the demo puts in the mesh), GNU tar and gzip (the demo's archive), then the package itself with `npm ci`
# (which builds dist/ in `prepare`). No firewall, browser or container engine is installed, and no service
# of the machine is stopped, disabled or reconfigured. The test suite's own tools are scripts/setup-tests.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/setup-common.sh
. scripts/setup-common.sh

check_node
for pair in nats-server:nats-server tar:tar gzip:gzip; do need_for "$pair"; done
# The demo's image is busybox-static's one binary: Debian's dynamically linked busybox would not run alone
# in an image.
need_package busybox-static
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]} (what scripts/try.sh uses)" >&2
  install_packages "${need[@]}"
fi
build_project
