#!/usr/bin/env bash
# Installs what mesh-host and its tests need on a fresh Debian machine, as root: the real components
# the tests start (systemd-container, mmdebstrap for an OpenRC tree, nats-server, nftables, iproute2,
# strace, graphviz; GNU tar, gzip and python3 build the hostile archives), then the package itself with `npm ci` (which builds dist/ in `prepare`).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pair in systemd-nspawn:systemd-container mmdebstrap:mmdebstrap,gpg,debian-archive-keyring,arch-test nats-server:nats-server nft:nftables ip:iproute2 strace:strace dot:graphviz nsenter:util-linux /usr/bin/time:time tar:tar gzip:gzip python3:python3-minimal; do
  # A command, and the packages that bring it (comma-separated).
  if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
    IFS=, read -r -a packages <<< "${pair#*:}"
    need+=("${packages[@]}")
  fi
done
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  npm run --silent build
fi
