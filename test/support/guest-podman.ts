import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from './cli.js';
import type { GuestVariant } from './guest.js';

/**
 * The guest with Debian's podman in it (bookworm's 4.3, crun, conmon, and the network stack and image
 * libraries its packages depend on), for a container's power cut. Built only by what needs it.
 */
export const PODMAN_GUEST: GuestVariant = { name: 'podman', packages: ['podman', 'crun', 'conmon'], modules: ['overlay'] };

/** Where the guest's podman serves its API: the second of the sockets the host tries, so no configuration names it. */
export const PODMAN_SOCKET = '/run/podman/podman.sock';

/**
 * A rootful podman with no systemd: groups made by hand in the cgroup2 the init mounts, events in a file,
 * and its store on the data disk (the system is read-only, and a cut must find podman's own records where
 * it finds the host's). overlay, as a real host's podman has it: with vfs, which copies the image into each
 * container and syncs none of it, a cut within the minute after a replacement lost the new container's
 * /bin/sh (`Exec format error` at its next start), a loss overlay has not got (a container's files are the image's, read through).
 * Containers get a network namespace with its loopback alone: Docker's API (what the host speaks) asks
 * for the default network, which podman 4.3 makes a bridge (a module, a veth pair and iptables rules
 * the guest has not got) whatever `netns` says; its default network here is one of the loopback plugin only.
 */
const CONTAINERS_CONF = [
  '[network]',
  'network_backend = "cni"',
  'network_config_dir = "/run/boot/cni"',
  'default_network = "mesh-none"',
  '[engine]',
  'cgroup_manager = "cgroupfs"',
  'events_logger = "file"',
  'runtime = "crun"',
  'image_copy_tmp_dir = "/data/containers/tmp"',
  '',
].join('\n');
const STORAGE_CONF = ['[storage]', 'driver = "overlay"', 'graphroot = "/data/containers/storage"', 'runroot = "/run/containers/storage"', ''].join('\n');

/** The shell lines that make podman's configuration the boot's own (the system's /etc is read-only). */
export const PODMAN_ENV = [
  'export CONTAINERS_CONF=/run/boot/containers.conf CONTAINERS_STORAGE_CONF=/run/boot/storage.conf',
  'mkdir -p /run/podman /data/containers/tmp',
  // podman makes a container's storage through a file in /var/tmp whatever its configuration says.
  'mount -t tmpfs -o mode=1777 tmpfs /var/tmp',
  // CNI keeps each container's network in /var/lib/cni, a path no configuration moves: /var/lib is on
  // the data disk here, cut with the rest.
  'mkdir -p /data/var-lib/cni && mount --bind /data/var-lib /var/lib',
];

/**
 * Starts podman's API in the background and waits until it answers: `MESH-GUEST:engine SECONDS` (or
 * `no`), then `MESH-GUEST:engine-after SECONDS` from the service's start to its answer by the guest's clock.
 */
export const PODMAN_SERVICE = [
  ...PODMAN_ENV,
  'S=$(cut -d" " -f1 /proc/uptime)',
  `podman system service --time=0 unix://${PODMAN_SOCKET} >/run/podman.log 2>&1 &`,
  `/opt/mesh/node /opt/mesh/check.mjs engine ${PODMAN_SOCKET} 600`,
  'echo "MESH-GUEST:engine-after $(awk "BEGIN { print $(cut -d" " -f1 /proc/uptime) - $S }")"',
];

/** A shell function: `timed NAME COMMAND…` runs it and says `MESH-GUEST:NAME CODE SECONDS` (by the guest's clock), then its last words. */
export const TIMED = [
  'up() { cut -d" " -f1 /proc/uptime; }',
  'timed() { n=$1; shift; s=$(up); "$@" >/run/$n.out 2>&1; c=$?; echo "MESH-GUEST:$n $c $(awk "BEGIN { print $(up) - $s }")"; tail -c 600 /run/$n.out | sed "s/^/MESH-GUEST:said-$n /"; }',
];

/** The image the guest's podman loads: a busybox one made on this machine (scripts/busybox-image.mjs), and its sha256. */
export function guestImage(dir: string): { path: string; sha256: string } {
  const path = join(dir, 'guest-image.tar');
  execFileSync(process.execPath, [join(projectDir, 'scripts/busybox-image.mjs'), path, 'localhost/busybox:guest']);
  return { path, sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
}

/** The boot's files podman reads: its configuration (and the image, for the boot that loads it). */
export function podmanFiles(image?: { path: string }): Record<string, string | Buffer> {
  return {
    'containers.conf': CONTAINERS_CONF,
    'storage.conf': STORAGE_CONF,
    'cni/mesh-none.conflist': JSON.stringify({ cniVersion: '0.4.0', name: 'mesh-none', plugins: [{ type: 'loopback' }] }),
    ...(image ? { 'image.tar': readFileSync(image.path) } : {}),
  };
}

/**
 * The image loaded, and tagged with the name the host gives an image archive of that sha256 once it has
 * loaded it: the host then finds it loaded, as after its first apply, and needs no mesh to bring it.
 */
export const loadImage = (sha256: string) => [
  'timed load podman load -i /run/boot/image.tar',
  `timed tag podman tag localhost/busybox:guest localhost/mesh-host-image:${sha256}`,
];

/**
 * The declaration of one container, `generation` in its environment: a change of generation is a change
 * of its spec, which the host makes by replacing the container. Its shell leaves at the stop's SIGTERM
 * (a shell as PID 1 would otherwise ignore it and wait out the stop's timeout).
 */
export function containerDeclaration(sha256: string, generation: number): object {
  return {
    version: 1,
    node: 'guest',
    mode: 'converged',
    sequence: 1,
    resources: [{
      type: 'container', id: 'app', name: 'app', state: 'running', stopTimeout: 5,
      image: { object: 'busybox-guest', sha256 },
      command: ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'],
      env: { GENERATION: String(generation) },
    }],
  };
}
