# Sourced by scripts/setup.sh (the demo's needs) and scripts/setup-tests.sh (the test suite's): the Node.js
# check, installing Debian packages with none of their services started, and the build. Nothing here
# stops, disables or reconfigures anything the machine had before.

# Node.js is the one thing the machine must bring (the README's prerequisites): Debian 12's own nodejs is
# older than what package.json's engines ask for. Said in one line, before anything is installed.
check_node() {
  local needed have
  needed=$(sed -n 's/.*"node": *">=\([0-9.]*\)".*/\1/p' package.json)
  have=$(node -p 'process.versions.node' 2>/dev/null || true)
  if [ -z "$have" ] || [ "$(printf '%s\n%s\n' "$needed" "$have" | sort -V | head -n1)" != "$needed" ]; then
    echo "setup: mesh-host needs Node.js $needed or newer (found: ${have:-no node on PATH}); install it first, see the README" >&2
    exit 2
  fi
}

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

# The packages (of "command:package[,package…]" pairs) whose command is missing, added to the array `need`.
need=()
need_for() {
  local pair packages
  for pair in "$@"; do
    if ! command -v "${pair%%:*}" >/dev/null 2>&1; then
      IFS=, read -r -a packages <<< "${pair#*:}"
      need+=("${packages[@]}")
    fi
  done
}

# A package is needed when dpkg does not have it installed.
need_package() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'ok installed' || need+=("$1")
}

# Debian packages, from the registry's current lists (fetched once a run), none of their services started.
# `installed_now` lists what this run installed: the only services setup may ever turn off are theirs.
lists_fresh=""
installed_now=()
install_packages() {
  [ $# -gt 0 ] || return 0
  export DEBIAN_FRONTEND=noninteractive
  [ -n "$lists_fresh" ] || { apt-get update -qq; lists_fresh=1; }
  keep_services_stopped apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  installed_now+=("$@")
}

# Builds the programs: `npm ci` when node_modules is missing or older than the lock file, else the build.
build_project() {
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund
  else
    npm run --silent build
  fi
}
