// The node binary a release's single executable is made from, for each architecture it is built for:
// this node for its own architecture, and for another the official build Node publishes on npm as
// `node-linux-ARCH`, at the version package-lock.json pins (an optional dependency, so that npm installs
// it only on a machine of that architecture). The pin must be this node's version: every executable of
// a release carries the same Node, and the blob injected into it is made by this node.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/** The architectures `npm run release` builds, the first the one whose files are at the top of the release. */
export const ARCHES = ['x64', 'arm64'];

/** binutils' strip for another architecture's ELF (the machine's own `strip` refuses it; its generic ELF backend breaks the file). */
const CROSS_STRIP = { x64: 'x86_64-linux-gnu-strip', arm64: 'aarch64-linux-gnu-strip' };
const CROSS_BINUTILS = { x64: 'binutils-x86-64-linux-gnu', arm64: 'binutils-aarch64-linux-gnu' };

/** What package-lock.json pins of `node-linux-ARCH`, checked to be this node's version. */
export function pinnedNode(arch, lockFile = 'package-lock.json') {
  const name = `node-linux-${arch}`;
  const lock = JSON.parse(readFileSync(lockFile, 'utf8'));
  const pin = lock.packages?.[`node_modules/${name}`];
  const add = `npm install --save-optional --save-exact ${name}@${process.versions.node}`;
  if (!pin) throw new Error(`${lockFile} pins no ${name}, the Node a linux-${arch} executable is made from: add it with \`${add}\``);
  if (pin.version !== process.versions.node) {
    throw new Error(`${lockFile} pins ${name} ${pin.version}, but this node is ${process.versions.node}: a release's executables carry one Node; build with node ${pin.version}, or pin this one with \`${add}\``);
  }
  if (!pin.integrity) throw new Error(`${lockFile} has no integrity for ${name} ${pin.version}`);
  return { name, version: pin.version, integrity: pin.integrity };
}

/** Refuses bytes whose digest is not the lock file's integrity (`sha512-BASE64`), naming `what` and both digests. */
export function checkIntegrity(bytes, integrity, what) {
  const [algorithm, expected] = integrity.split(/-(.*)/s);
  const actual = createHash(algorithm).update(bytes).digest('base64');
  if (actual !== expected) throw new Error(`${what} is ${algorithm}-${actual}, not ${integrity} as package-lock.json pins: refused`);
}

/**
 * `node-linux-ARCH`'s bin/node written to `to`: the package fetched by npm's own client (from its cache
 * once fetched), its bytes checked against the lock file's integrity before anything is taken out of it.
 */
function fetchPinnedNode(arch, to) {
  const pin = pinnedNode(arch);
  const scratch = mkdtempSync(join(to, '..', `.${pin.name}-`));
  try {
    const packed = execFileSync('npm', ['pack', `${pin.name}@${pin.version}`, '--pack-destination', scratch, '--prefer-offline', '--json', '--silent'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const tgz = join(scratch, JSON.parse(packed)[0].filename);
    checkIntegrity(readFileSync(tgz), pin.integrity, `${pin.name} ${pin.version} as npm fetched it`);
    execFileSync('tar', ['--extract', '--gzip', '--file', tgz, '--directory', scratch, '--strip-components=2', 'package/bin/node']);
    renameSync(join(scratch, 'node'), to);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * The node binary for `arch` at `to`, without its symbol tables (the dynamic ones native addons link
 * against stay): the same code, some 12 MB smaller. strip warns about notes it does not know; they are
 * kept as they are.
 */
export function nodeBinary(arch, to) {
  if (arch === process.arch) copyFileSync(process.execPath, to);
  else fetchPinnedNode(arch, to);
  const strip = arch === process.arch ? 'strip' : CROSS_STRIP[arch];
  if (!strip) throw new Error(`no strip is known for ${arch}`);
  try {
    execFileSync(strip, ['--strip-all', to], { stdio: ['ignore', 'ignore', 'ignore'] });
  } catch (err) {
    if (err.code === 'ENOENT') throw new Error(`${strip} is not installed: a linux-${arch} executable is stripped by it (apt-get install ${CROSS_BINUTILS[arch] ?? 'binutils'})`, { cause: err });
    throw new Error(`${strip} --strip-all ${to} failed (${err.status ?? err.signal})`, { cause: err });
  }
  return to;
}
