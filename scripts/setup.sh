#!/usr/bin/env bash
# Installs what mesh-host and its tests need on a fresh Debian machine, as root: the real components
# the tests start (systemd-container, mmdebstrap for an OpenRC tree, nats-server, nftables, iproute2,
# strace, graphviz, chromium for the page's browser tests, the firewalls; GNU tar, gzip and python3 build the hostile archives; podman, Debian's
# docker-registry and busybox-static give the container tests a real engine, registry and image), then the
# package itself with `npm ci` (which builds dist/ in `prepare`).
set -euo pipefail
cd "$(dirname "$0")/.."

# Node.js is the one thing the machine must bring (the README's prerequisites): Debian 12's own nodejs is
# older than what package.json's engines ask for. Said in one line, before anything is installed.
needed=$(sed -n 's/.*"node": *">=\([0-9.]*\)".*/\1/p' package.json)
have=$(node -p 'process.versions.node' 2>/dev/null || true)
if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$needed" "$have" | sort -V | head -n1)" != "$needed" ]; then
  echo "setup: mesh-host needs Node.js $needed or newer (found: ${have:-no node on PATH}); install it first, see the README's set-up" >&2
  exit 2
fi

# Runs a command with /usr/sbin/policy-rc.d refusing every service start (invoke-rc.d's own switch), and
# leaves the machine's policy-rc.d exactly as it found it, on success or failure. One that already refuses
# starts (most container images ship one that says 'exit 101') is used as it is; any other is set aside
# and put back afterwards, byte for byte, with its mode and owner.
keep_services_stopped() {
  local policy=/usr/sbin/policy-rc.d saved="" status=0
  if [ -e "$policy" ] || [ -L "$policy" ]; then
    if [ -x "$policy" ] && { "$policy" mesh-host-setup start >/dev/null 2>&1; [ $? -eq 101 ]; }; then
      "$@"
      return
    fi
    saved=$(mktemp /usr/sbin/.policy-rc.d.mesh-host.XXXXXX)
    mv -f "$policy" "$saved"
  fi
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy"
  # shellcheck disable=SC2064 # the names are fixed now, on purpose
  trap "rm -f '$policy'; [ -z '$saved' ] || mv -f '$saved' '$policy'" EXIT
  "$@" || status=$?
  rm -f "$policy"
  [ -z "$saved" ] || mv -f "$saved" "$policy"
  trap - EXIT
  return "$status"
}

# Debian packages, from the registry's current lists (fetched once a run), none of their services started.
lists_fresh=""
install_packages() {
  export DEBIAN_FRONTEND=noninteractive
  [ -n "$lists_fresh" ] || { apt-get update -qq; lists_fresh=1; }
  keep_services_stopped apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

need=()
for pair in systemd-nspawn:systemd-container mmdebstrap:mmdebstrap,gpg,debian-archive-keyring,arch-test nats-server:nats-server nft:nftables ip:iproute2 strace:strace dot:graphviz nsenter:util-linux /usr/bin/time:time strip:binutils tar:tar gzip:gzip python3:python3-minimal chromium:chromium; do
  # A command, and the packages that bring it (comma-separated).
  if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
    IFS=, read -r -a packages <<< "${pair#*:}"
    need+=("${packages[@]}")
  fi
done
# The container tests' image is busybox-static's one binary: Debian's dynamically linked busybox would not
# run alone in an image.
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' || need+=(busybox-static)
# --peers: the tools the peer benchmark runs beside mesh-host (npm run bench -- peers).
if [ "${1:-}" = "--peers" ]; then
  for pair in puppet:puppet cf-agent:cfengine3; do
    if ! command -v "${pair%%:*}" >/dev/null 2>&1; then need+=("${pair#*:}"); fi
  done
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}" >&2
  install_packages "${need[@]}"
  # The peers are run by the benchmark alone, on scratch trees: their own services stay off.
  if [ "${1:-}" = "--peers" ] && command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now puppet cfengine3 >/dev/null 2>&1 || true
  fi
fi

# The firewalls the found-firewall tests retire (in a container with a private network) and the tools
# the ruleset fixtures were captured with. Installed without starting their services (policy-rc.d),
# then disabled on this machine's root: they must never filter this machine, nor start in a test's
# container over its root. ufw's own switch (ENABLED=no in /etc/ufw/ufw.conf) is left as shipped.
firewall_packages=()
for pair in ufw:ufw firewall-cmd:firewalld fail2ban-client:fail2ban iptables-legacy-save:iptables podman:podman docker-registry:docker-registry; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || firewall_packages+=("${pair#*:}")
done
if [ ${#firewall_packages[@]} -gt 0 ]; then
  echo "setup: installing ${firewall_packages[*]} with their services kept from starting" >&2
  install_packages "${firewall_packages[@]}"
fi
firewall_units=()
# The registry is started by the container tests alone, on a container's loopback.
for unit in ufw.service firewalld.service fail2ban.service docker-registry.service; do
  if [ "$(systemctl --root=/ is-enabled "$unit" 2>/dev/null)" = enabled ]; then firewall_units+=("$unit"); fi
done
if [ ${#firewall_units[@]} -gt 0 ]; then
  echo "setup: disabling ${firewall_units[*]} on this machine" >&2
  if [ -d /run/systemd/system ]; then systemctl disable --now "${firewall_units[@]}"; else systemctl --root=/ disable "${firewall_units[@]}"; fi
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
else
  npm run --silent build
fi
