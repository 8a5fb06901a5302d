#!/usr/bin/env bash
# What the test suite needs beyond the demo's (scripts/setup.sh), on a Debian machine, as root: the real
# components the tests start themselves (systemd-container, mmdebstrap for fresh Debian trees, nftables,
# iproute2, strace, faketime (a process's wall clock stepped), graphviz, dpkg-dev to build and index the package tests' own repository, chromium for
# the page's browser tests; ufw, firewalld, fail2ban and legacy
# iptables, which the found-firewall tests run in containers with a private network; podman,
# docker-registry for the container tests; python3 for the hostile archives; lintian for the Debian
# packages the release builds; qemu-system-x86, netcat-openbsd, e2fsprogs and xz-utils for the power-cut
# guest: QEMU boots it, nc reaches a loopback server from it, mkfs.ext4 makes its disks, xz unpacks its kernel;
# binutils-aarch64-linux-gnu, whose strip the release's linux-arm64 executable is stripped with, and
# qemu-user-static, which the tests run that executable under, explicitly (they neither register nor need a
# binfmt handler; binfmt-support, its recommendation, is not installed)), then setup.sh.
# --peers adds the tools the peer benchmark runs beside mesh-host (Puppet, CFEngine), and valgrind, which
# counts the instructions of two builds it compares (PEERS_AGAINST).
#
# Packages are installed with none of their services started. A service this run installed (a firewall
# would filter this machine from its next boot) is disabled again at once; a service the machine had
# before is left exactly as it was found: enabled, running, configured, whatever it was.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/setup-common.sh
. scripts/setup-common.sh

check_node
for pair in systemd-nspawn:systemd-container mmdebstrap:mmdebstrap,gpg,debian-archive-keyring,arch-test nft:nftables ip:iproute2 strace:strace dot:graphviz nsenter:util-linux /usr/bin/time:time strip:binutils aarch64-linux-gnu-strip:binutils-aarch64-linux-gnu qemu-aarch64-static:qemu-user-static dpkg-scanpackages:dpkg-dev python3:python3-minimal chromium:chromium lintian:lintian qemu-system-x86_64:qemu-system-x86 nc:netcat-openbsd mkfs.ext4:e2fsprogs xz:xz-utils faketime:faketime; do
  need_for "$pair"
done
for pair in ufw:ufw firewall-cmd:firewalld fail2ban-client:fail2ban iptables-legacy-save:iptables podman:podman docker-registry:docker-registry; do
  need_for "$pair"
done
if [ "${1:-}" = "--peers" ]; then
  for pair in puppet:puppet cf-agent:cfengine3 valgrind:valgrind; do need_for "$pair"; done
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup-tests: installing ${need[*]} with their services kept from starting" >&2
  install_packages "${need[@]}"
fi

# The services of the packages installed just now stay off at boot: they were not on this machine before
# this run, and must never filter it or take its ports. Nothing else is touched.
ours=()
for unit in ufw:ufw.service firewalld:firewalld.service fail2ban:fail2ban.service docker-registry:docker-registry.service puppet:puppet.service cfengine3:cfengine3.service; do
  for package in "${installed_now[@]}"; do
    if [ "$package" = "${unit%%:*}" ] && [ "$(systemctl --root=/ is-enabled "${unit#*:}" 2>/dev/null)" = enabled ]; then ours+=("${unit#*:}"); fi
  done
done
if [ ${#ours[@]} -gt 0 ]; then
  echo "setup-tests: keeping ${ours[*]} (installed just now) from starting at boot" >&2
  systemctl --root=/ disable "${ours[@]}" >/dev/null 2>&1
fi

bash scripts/setup.sh
