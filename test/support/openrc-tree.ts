import { spawnSync } from 'node:child_process';
import { existsSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { containerUnavailable, startContainer, type ContainerOptions, type SystemdContainer } from './systemd-container.js';

/** Debian's OpenRC in a tree of its own, made once by mmdebstrap and kept in the temporary folder for later runs. */
const TREE = join(tmpdir(), 'mesh-host-openrc-bookworm');
const MIRROR = 'http://deb.debian.org/debian';

export function openrcUnavailable(): string | undefined {
  const container = containerUnavailable();
  if (container) return container;
  if (spawnSync('mmdebstrap', ['--version']).error) return 'mmdebstrap is not installed (apt-get install mmdebstrap)';
  return undefined;
}

/** The tree, made when missing (a minute or two: Debian's packages are fetched). A half-made tree is never kept. */
const complete = (tree: string) => existsSync(join(tree, 'sbin/openrc-run')) || existsSync(join(tree, 'usr/sbin/openrc-run'));

export function openrcTree(): string {
  if (complete(TREE)) return TREE;
  const making = `${TREE}.making-${process.pid}`;
  rmSync(making, { recursive: true, force: true });
  // Node runs inside from this machine's binary (bound read-only), so the tree carries its C++ library.
  const made = spawnSync('mmdebstrap', ['--variant=minbase', '--include=openrc,libstdc++6,procps', 'bookworm', making, MIRROR], { encoding: 'utf8', timeout: 600_000 });
  if (made.status !== 0) {
    rmSync(making, { recursive: true, force: true });
    throw new Error(`mmdebstrap could not make the OpenRC tree (${made.status ?? made.signal}):\n${(made.stderr ?? '').slice(-3000)}`);
  }
  // Test files run in parallel workers, each of which may have made a tree: the first one in is kept
  // (another's containers may already run over it), later ones are dropped.
  if (!complete(TREE)) rmSync(TREE, { recursive: true, force: true });
  try {
    renameSync(making, TREE);
  } catch (err) {
    if (!complete(TREE)) throw err;
    rmSync(making, { recursive: true, force: true });
  }
  return TREE;
}

/**
 * OpenRC's own tools over a throwaway overlay of the tree, in a container of its own. OpenRC is not
 * PID 1 there (nspawn's stub is): it runs as it does in a container, once told its runlevel started.
 */
export function startOpenrcContainer(options: ContainerOptions & { withoutNode?: boolean } = {}): Promise<SystemdContainer> {
  return startContainer({
    ...options,
    tree: openrcTree(),
    // Node is there only when asked: a single executable is tried where there is none.
    readOnlyBinds: [...(options.readOnlyBinds ?? []), ...(options.withoutNode ? [] : [process.execPath])],
    boot: false,
    // What `openrc sysinit` leaves for the tools: a runlevel said started, and its state folders (the
    // first rc-status makes them).
    command: ['/bin/sh', '-c', 'mkdir -p /run/openrc && touch /run/openrc/softlevel && rc-status >/dev/null 2>&1; touch /run/mesh-host-test-ready; exec sleep infinity'],
    ready: async (exec) => (await exec('test', ['-e', '/run/mesh-host-test-ready'], 5000)).code === 0,
  });
}
