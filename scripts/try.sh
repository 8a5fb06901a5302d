#!/usr/bin/env bash
# The main job, end to end on loopback, on a scratch tree: installs what it needs, shows what mesh-host
# sees on this machine, makes a mesh in operator mode with meshctl init and starts its nats-server, gives
# a host its own key and credentials, enrols it by genesis on a scratch --root,
# runs the daemon, puts an archive in the mesh's object store, sends a changed declaration that unpacks it
# (and the same again), shows the reports, the host and the fleet, puts an image in the object store and
# runs one container from it when an engine answers (says why not when none does), serves the fleet's
# page on loopback and prints its address (a terminal keeps it up until Enter), and stops everything.
# Nothing outside the scratch folder is touched; only processes started here are stopped, by PID.
set -euo pipefail
cd "$(dirname "$0")/.."
# The test suite runs this script after it has installed and built everything itself; rebuilding
# dist/ then would pull it from under the suite's other tests.
[ "${MESH_HOST_SETUP_DONE:-}" = 1 ] || bash scripts/setup.sh >&2

scratch=$(mktemp -d /tmp/mesh-host-try.XXXXXX)
mkdir -p "$scratch/root/etc" "$scratch/root/srv" "$scratch/site/assets"
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
port=$(free_port)
# The hub listens for sites' leaf nodes too: on a port of its own, so that two tries at once never meet on 7422.
leaf_port=$(free_port)
server="nats://127.0.0.1:$port"
flags=(--root "$scratch/root" --state-dir "$scratch/state" --config "$scratch/host.json")
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

echo "== mesh-host inventory"
./bin/mesh-host inventory
echo

echo "== a nats-server for the mesh on $server, in operator mode: meshctl init makes its operator, accounts and credentials"
./bin/meshctl init "$scratch/mesh" --port "$port" --leaf-port "$leaf_port" --log-level warn
# Each log is made before its process starts: the waits below read it at once.
: > "$scratch/nats.log"; : > "$scratch/daemon.log"; : > "$scratch/serve.log"
nats-server -c "$scratch/mesh/nats-server.conf" > "$scratch/nats.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do grep -q 'Server is ready' "$scratch/nats.log" && break; sleep 0.1; done
# From here meshctl takes the servers, its credentials and the signing key from the mesh directory.
export MESH_DIR="$scratch/mesh"
echo

echo "== the host's own key (pinned in the mesh, with its labels) and NATS credentials (its own subjects only), and a genesis bundle carrying both, for node 'example'"
./bin/meshctl node-key example --out "$scratch/example.nk" --label role=web --label site=a --log-level warn
./bin/meshctl node-creds example --out "$scratch/example.creds" --log-level warn
./bin/meshctl bundle fixtures/declarations/example.json --node-key "$scratch/example.nk" --embed-creds "$scratch/example.creds" --out "$scratch/bundle.json" --log-level warn
echo

echo "== mesh-host genesis (scratch root $scratch/root)"
./bin/mesh-host genesis "$scratch/bundle.json" --mode converged "${flags[@]}" --log-level warn
echo

echo "== mesh-host run, in the background (its log: $scratch/daemon.log)"
./bin/mesh-host run "${flags[@]}" > "$scratch/daemon.log" 2>&1 &
daemon=$!
pids=("$daemon" "${pids[@]}")
for _ in $(seq 100); do grep -q 'link: connected' "$scratch/daemon.log" && break; sleep 0.1; done

# Waits (up to 20 s) until the mesh holds N reports from the node.
wait_reports() {
  for _ in $(seq 100); do
    [ "$(./bin/meshctl reports --node example --json --log-level warn | grep -c .)" -ge "$1" ] && return 0
    sleep 0.2
  done
  echo "try: fewer than $1 reports after 20 s; the daemon's log is $scratch/daemon.log" >&2
  return 1
}

echo "== an archive for the hosts: a small site, packed the same way every time (its sha256 is stable)"
(
  umask 022
  printf '<h1>Served from an archive the mesh unpacked.</h1>\n' > "$scratch/site/index.html"
  printf 'h1 { font-family: sans-serif; }\n' > "$scratch/site/assets/site.css"
  chmod 0755 "$scratch/site/assets"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$scratch/site" -cf - index.html assets | gzip -n > "$scratch/site.tar.gz"
)
echo "== meshctl put-archive site.tar.gz --name site-1.tar.gz (read as every host will, then uploaded to the mesh's object store)"
./bin/meshctl put-archive "$scratch/site.tar.gz" --name site-1.tar.gz --log-level warn | tee "$scratch/put-archive.out"
# The resource it printed, unpacked at /srv/site, added to the changed declaration.
tail -n 1 "$scratch/put-archive.out" | node -e '
  const resource = { ...JSON.parse(require("fs").readFileSync(0, "utf8")), path: "/srv/site" };
  const declaration = JSON.parse(require("fs").readFileSync("fixtures/declarations/example-update.json", "utf8"));
  declaration.resources.push(resource);
  require("fs").writeFileSync(process.argv[1], JSON.stringify(declaration, null, 2));' "$scratch/example-update.json"
echo

echo "== meshctl plan example-update.json --all --diff (every host asked for the plan it would make for its own signed copy; nothing changes anywhere; exit 2: changes would be made)"
./bin/meshctl plan "$scratch/example-update.json" --all --diff --log-level warn || [ $? -eq 2 ]
echo

echo "== meshctl send example example-update.json (fixtures/declarations/example-update.json and the archive at /srv/site), then the same again (it names no sequence: each send takes the next)"
./bin/meshctl send example "$scratch/example-update.json" --log-level warn
wait_reports 2
./bin/meshctl send example "$scratch/example-update.json" --log-level warn
wait_reports 3
echo
echo "== meshctl reports --node example --text (one line a report: when, node, sequence, trigger, outcome, steps, the declaration; then each step that did something)"
./bin/meshctl reports --node example --text --log-level warn
echo
echo "== meshctl history example --text (every declaration the node was given: its number, when, its outcome by the reports, who signed it, what it changed)"
./bin/meshctl history example --text --log-level warn
echo
echo "== meshctl send example-update.json --all (one send to every node with a key: each gets its own numbered, signed copy; a node whose key holds it already is skipped)"
./bin/meshctl send "$scratch/example-update.json" --all --log-level warn
echo
echo "== the archive, unpacked on the scratch root at /srv/site"
(cd "$scratch/root/srv/site" && find . -type f | sort | while read -r f; do echo "$f: $(head -c 60 "$f")"; done)
echo
echo "== meshctl status example (the host asked)"
./bin/meshctl status example --log-level warn
echo
echo "== meshctl status --select role=web (the fleet at a glance, the nodes labelled role=web: one line a node, worst first; exit 1 if any failed or is silent)"
./bin/meshctl status --select role=web --log-level warn
echo
echo "== a container, its image from the mesh's object store (no registry): an image archive made offline from busybox-static, put with meshctl put-image"
node scripts/busybox-image.mjs "$scratch/busybox.tar"
./bin/meshctl put-image "$scratch/busybox.tar" --name busybox-try.tar --log-level warn | tee "$scratch/put-image.out"
# MESH_CONTAINER_SOCKET names an engine elsewhere (a podman system service in a container, say).
socket=${MESH_CONTAINER_SOCKET:-$(node -e 'import("./dist/src/kinds/container/socket.js").then(async (m) => { const r = await m.engineSocket(undefined); console.log("socket" in r ? r.socket : "") })')}
if [ -z "$socket" ]; then
  echo "no container shown: no container engine answers at /run/docker.sock or /run/podman/podman.sock on this machine (Docker, or podman's 'podman system service', serves the API a container is converged through; containerSocket in the host configuration names another)"
else
  # A one-shot apply beside the daemon (its own state directory), the image fetched over the host's link.
  tail -n 1 "$scratch/put-image.out" | node -e '
    const { image } = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const [dir, socket] = process.argv.slice(1);
    const config = { ...JSON.parse(require("fs").readFileSync(`${dir}/host.json`, "utf8")), containerSocket: socket };
    require("fs").writeFileSync(`${dir}/container-host.json`, JSON.stringify(config));
    const container = { type: "container", id: "try", name: "mesh-host-try", image, command: ["sh", "-c", "trap \"exit 0\" TERM; sleep 100000 & wait"], state: "running" };
    for (const [name, resources] of [["container", [container]], ["no-container", []]])
      require("fs").writeFileSync(`${dir}/${name}.json`, JSON.stringify({ version: 1, node: "example", mode: "converged", sequence: name === "container" ? 1 : 2, resources }));' "$scratch" "$socket"
  cflags=(--root "$scratch/root" --state-dir "$scratch/state-container" --config "$scratch/container-host.json" --log-level warn)
  echo "== mesh-host apply container.json (engine at $socket): the image loaded, the container created and started, looked at again"
  ./bin/mesh-host apply "$scratch/container.json" "${cflags[@]}"
  echo "== mesh-host apply no-container.json: the container is no longer declared, and goes"
  ./bin/mesh-host apply "$scratch/no-container.json" "${cflags[@]}"
fi
echo
page_port=$(free_port)
echo "== meshctl serve --listen 127.0.0.1:$page_port (the fleet's live page, read-only, on loopback; its log: $scratch/serve.log)"
./bin/meshctl serve --listen "127.0.0.1:$page_port" --log-level warn > "$scratch/serve.log" 2>&1 &
pids=("$!" "${pids[@]}")
for _ in $(seq 100); do grep -q "serving the mesh's page" "$scratch/serve.log" && break; sleep 0.1; done
page="http://127.0.0.1:$page_port/"
echo "open $page in a browser: a row a node, live; the node's name opens its reports and its lifecycle"
# What the page's events carry first, read as the browser reads them.
node -e '
  fetch(process.argv[1] + "events").then(async (res) => {
    const reader = res.body.getReader();
    let text = "";
    while (!text.includes("\n\n")) text += new TextDecoder().decode((await reader.read()).value);
    const rows = JSON.parse(/^data: (.*)$/m.exec(text)[1]).rows;
    console.log(`its events (${res.status}): ${rows.map((r) => `${r.node} ${r.state}`).join(", ")}`);
    process.exit(0);
  });' "$page"
if [ -t 0 ] && [ -t 1 ]; then read -r -p "the page stays up until you press Enter " _; fi
echo

echo "== stopping the page, the daemon (SIGTERM: it ends between applies) and the nats-server"
kill -TERM "${pids[0]}"; wait "${pids[0]}" || true
pids=("${pids[@]:1}")
kill -TERM "$daemon"; wait "$daemon" || true
pids=("${pids[@]:1}")
echo "(scratch left in $scratch for a look; remove it with: rm -rf $scratch)"
