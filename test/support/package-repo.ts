import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freshDebianTree } from './fresh-debian.js';

/** One package of the test repository: its control fields beyond the usual ones, and its maintainer scripts. */
export interface TestPackage {
  name: string;
  version: string;
  depends?: string;
  postinst?: string;
  prerm?: string;
  /** Files it ships, by path inside the root. */
  files?: Record<string, { text: string; mode?: number }>;
}

/** Builds a .deb of each package with dpkg-deb, into `dir`. */
export function buildDebs(packages: readonly TestPackage[], dir: string, work: string): void {
  for (const p of packages) {
    const tree = join(work, `${p.name}-${p.version}`);
    mkdirSync(join(tree, 'DEBIAN'), { recursive: true });
    mkdirSync(join(tree, 'usr/share', p.name), { recursive: true });
    writeFileSync(join(tree, 'usr/share', p.name, 'version'), `${p.version}\n`);
    for (const [path, { text, mode }] of Object.entries(p.files ?? {})) {
      mkdirSync(join(tree, path, '..'), { recursive: true });
      writeFileSync(join(tree, path), text, { mode: mode ?? 0o644 });
    }
    const control = [`Package: ${p.name}`, `Version: ${p.version}`, 'Architecture: all', 'Maintainer: mesh-host tests <tests@localhost>', ...(p.depends ? [`Depends: ${p.depends}`] : []), `Description: ${p.name}, made by a test`, ''];
    writeFileSync(join(tree, 'DEBIAN/control'), control.join('\n'));
    for (const script of ['postinst', 'prerm'] as const) {
      const text = p[script];
      if (text === undefined) continue;
      writeFileSync(join(tree, 'DEBIAN', script), text);
      chmodSync(join(tree, 'DEBIAN', script), 0o755);
    }
    execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', tree, join(dir, `${p.name}_${p.version}_all.deb`)], { stdio: 'pipe' });
  }
}

/** A local repository in `dir`: each package's .deb, and the index (`Packages`) a `file:` source reads. */
export function buildRepository(packages: readonly TestPackage[], dir: string, work: string): void {
  mkdirSync(dir, { recursive: true });
  buildDebs(packages, dir, work);
  const index = spawnSync('dpkg-scanpackages', ['--multiversion', '.'], { cwd: dir, encoding: 'utf8' });
  if (index.status !== 0) throw new Error(`dpkg-scanpackages could not index the test repository: ${index.error?.message ?? index.stderr}`);
  writeFileSync(join(dir, 'Packages'), index.stdout);
}

/**
 * A Debian root to install packages in, as a machine's tree seen from outside: an overlay over the
 * cached fresh Debian tree (fresh-debian.ts; made once by mmdebstrap), with a middle layer made once
 * for the test file: a local repository at /srv/repo (a `file:` source with its own index, trusted as
 * a test repository, the only one the root reads) and its lists read. `reset` puts the root back as that
 * layer left it (a new upper layer); nothing run in it reaches the tree below.
 */
export interface PackageRoot {
  root: string;
  /** Where the .deb files are, seen from inside the root. */
  repo: string;
  reset(): void;
  /** Runs a command inside the root (chroot), as a person at the machine would. */
  inside(command: string, args: string[]): string;
  dispose(): void;
}

const mount = (lower: string, upper: string, work: string, at: string) => {
  const mounted = spawnSync('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=${lower},upperdir=${upper},workdir=${work}`, at], { encoding: 'utf8' });
  if (mounted.status !== 0) throw new Error(`the package root's overlay could not be mounted: ${mounted.stderr}`);
};
const unmount = (at: string) => {
  if (spawnSync('umount', [at]).status !== 0) spawnSync('umount', ['-l', at]);
};

export function packageRoot(packages: readonly TestPackage[], options: { keepPolicy?: boolean } = {}): PackageRoot {
  const tree = freshDebianTree();
  const scratch = mkdtempSync(join(tmpdir(), 'mesh-host-packages-'));
  const dirs = ['layer', 'layer-work', 'upper', 'work', 'root', 'build'].map((d) => join(scratch, d));
  for (const d of dirs) mkdirSync(d);
  const [layer, layerWork, upper, work, root, build] = dirs as [string, string, string, string, string, string];
  const env = { ...process.env, LC_ALL: 'C', PATH: '/usr/sbin:/usr/bin:/sbin:/bin', DEBIAN_FRONTEND: 'noninteractive' };
  const inside = (command: string, args: string[]) => execFileSync('chroot', [root, command, ...args], { encoding: 'utf8', env, stdio: 'pipe' });
  // The middle layer: the repository, its source and its lists; the image's own policy-rc.d gone (each test says what the machine has).
  mount(tree, layer, layerWork, root);
  try {
    buildRepository(packages, join(root, 'srv/repo'), build);
    writeFileSync(join(root, 'etc/apt/sources.list'), 'deb [trusted=yes] file:/srv/repo ./\n');
    rmSync(join(root, 'etc/apt/sources.list.d'), { recursive: true, force: true });
    mkdirSync(join(root, 'etc/apt/sources.list.d'));
    if (!options.keepPolicy) rmSync(join(root, 'usr/sbin/policy-rc.d'), { force: true });
    inside('apt-get', ['update', '-q']);
  } finally {
    unmount(root);
  }
  const reset = () => {
    unmount(root);
    rmSync(upper, { recursive: true, force: true });
    rmSync(work, { recursive: true, force: true });
    mkdirSync(upper);
    mkdirSync(work);
    mount(`${layer}:${tree}`, upper, work, root);
  };
  mount(`${layer}:${tree}`, upper, work, root);
  return {
    root,
    repo: '/srv/repo',
    reset,
    inside,
    dispose() {
      unmount(root);
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}
