import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { build } from 'esbuild';
import { dropStaleBuilds, withBuildLock } from './build-lock.js';
import { projectDir } from './cli.js';

/**
 * A real guest kernel to cut the power of: Debian 12 built from Debian's packages, booted by
 * qemu-system-x86_64 straight into a shell script as PID 1 (test/support/guest-init.sh, on the tools
 * disk), no systemd. Made to be quick to build in a fresh clone:
 *   - the root: mmdebstrap's minimal system (minbase) with iproute2 and busybox-static, no kernel in it;
 *   - the kernel: only Debian's kernel package downloaded (not installed: no initramfs-tools, no
 *     update-initramfs, no 400 MB of modules unpacked into the root); its vmlinuz unpacked, and the
 *     handful of modules the guest needs (the virtio disks and network card, ext4) with what they
 *     depend on, read from each module's own `depends=`;
 *   - an initramfs written here (a newc archive of busybox, those modules and a ten-line init that
 *     loads them, mounts the root and switches to it).
 *
 * Why QEMU's own emulator and not KVM: this machine's /dev/kvm is PVM, which runs only kernels built as
 * PVM guests; a Debian kernel under -enable-kvm never leaves its decompressor. The emulator
 * (`-accel tcg,thread=multi -cpu max`) boots it, some ten times slower than hardware would.
 *
 * Killing QEMU is a power cut: what the guest kernel held in its page cache and had not written to the
 * disk is gone, exactly as when the power goes. The disks are files on this machine, written by QEMU
 * straight into this machine's page cache as the guest's disk completes each write (that cache survives QEMU).
 *
 * The system is made once and kept in the cache folder the caller names, under a digest of everything
 * that goes into it (the packages, the mirror, the initramfs's init, the modules): a change to any of
 * them makes a new one.
 */

const SOURCES = ['deb http://deb.debian.org/debian bookworm main', 'deb http://deb.debian.org/debian-security bookworm-security main'];
/** The modules the guest loads before its root is mounted (crc32c: ext4's checksums), the ones they depend on added. */
const MODULES = ['virtio_pci', 'virtio_blk', 'virtio_net', 'crc32c_generic', 'ext4'];
/** Where the kernel's package is downloaded to inside the tree (taken out before the root's image is made). */
const KERNEL_DEB_DIR = 'root/kernel-deb';
const MMDEBSTRAP = [
  '--variant=minbase',
  '--mode=root',
  '--dpkgopt=force-unsafe-io',
  '--include=iproute2,busybox-static',
  // The kernel's package (the one linux-image-amd64 depends on) downloaded, not installed.
  `--customize-hook=mkdir -p "$1/${KERNEL_DEB_DIR}" && chroot "$1" sh -c 'cd /${KERNEL_DEB_DIR} && apt-get -q -o APT::Sandbox::User=root download "$(apt-cache depends linux-image-amd64 | sed -n "s/^ *Depends: \\(linux-image-[0-9].*\\)/\\1/p" | head -n1)"'`,
  'bookworm',
];
/** The initramfs's init: the modules loaded in order, the root mounted read-only and switched to. */
const RDINIT = (modules: string[]) => [
  '#!/bin/busybox sh',
  '/bin/busybox mount -t proc proc /proc',
  '/bin/busybox mount -t devtmpfs devtmpfs /dev',
  ...modules.map((m) => `/bin/busybox insmod /lib/modules/${m}.ko || echo "MESH-GUEST:fail the module ${m} did not load"`),
  'i=0; while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do /bin/busybox sleep 0.1; i=$((i+1)); done',
  '/bin/busybox mount -t ext4 -o ro /dev/vda /root || echo "MESH-GUEST:fail the root did not mount"',
  '/bin/busybox mount --move /dev /root/dev',
  '/bin/busybox umount /proc',
  'exec /bin/busybox switch_root /root /sbin/mesh-guest-init',
  '',
].join('\n');
/**
 * The system's init: the tools disk (the third) mounted, and its init run. The whole init is of the run,
 * not of the cached system (test/support/guest-init.sh): a change to it needs no new system.
 */
const STUB = '#!/bin/sh\nmount -o ro /dev/vdc /opt/mesh && exec /opt/mesh/init\necho "MESH-GUEST:fail the tools disk did not mount"\necho o >/proc/sysrq-trigger\n';
const INIT = join(projectDir, 'test/support/guest-init.sh');
/** Raised when what the system holds changes in a way the rest of the key does not show. */
const FORMAT = 3;
const PREFIX = 'mesh-host-guest-';

/** The kernel (an ELF vmlinux), its initramfs and the root filesystem's image (never written: the guest mounts it read-only). */
export interface GuestSystem {
  kernel: string;
  initrd: string;
  system: string;
}

/** Why a guest cannot be booted here, or undefined when it can. */
export function guestUnavailable(): string | undefined {
  for (const [tool, pkg] of [['qemu-system-x86_64', 'qemu-system-x86'], ['mmdebstrap', 'mmdebstrap'], ['mkfs.ext4', 'e2fsprogs'], ['nc', 'netcat-openbsd'], ['dpkg-deb', 'dpkg'], ['xz', 'xz-utils']] as const) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (apt-get install ${pkg}; scripts/setup-tests.sh installs it)`;
  }
  return undefined;
}

/**
 * A system with more of Debian's packages in it than the base one (podman and what it needs, say), made
 * only by what asks for it: the base system's build and key are the same with or without variants.
 */
export interface GuestVariant {
  /** Names its cache folder (mesh-host-NAME-guest-…), apart from the base system's. */
  name: string;
  /** Installed beside the base system's iproute2 and busybox-static, with what they depend on. */
  packages: string[];
  /** Loaded by the initramfs after the base system's (the root holds no modules). */
  modules?: string[];
}

/** The modules the initramfs loads: the base system's, then a variant's. */
const modulesOf = (variant?: GuestVariant) => [...MODULES, ...(variant?.modules ?? [])];

/** mmdebstrap's arguments: the base system's, with a variant's packages included. */
function mmdebstrapArgs(variant?: GuestVariant): string[] {
  if (!variant) return MMDEBSTRAP;
  return [...MMDEBSTRAP.slice(0, -1), `--include=${variant.packages.join(',')}`, ...MMDEBSTRAP.slice(-1)];
}

/** A variant's cache folders are named apart, so that neither drops the other's as stale. */
const prefixOf = (variant?: GuestVariant) => (variant ? `mesh-host-${variant.name}-guest-` : PREFIX);

export function guestSystemPath(cache: string, variant?: GuestVariant): string {
  // The base system's inputs, as they were before variants: its key is unchanged by them.
  const inputs = { FORMAT, MMDEBSTRAP, SOURCES, STUB, MODULES, RDINIT: RDINIT(MODULES), ...(variant ? { variant } : {}) };
  return join(cache, `${prefixOf(variant)}${createHash('sha256').update(JSON.stringify(inputs)).digest('hex').slice(0, 16)}`);
}

function run(command: string, args: string[], what: string, timeout = 900_000): string {
  const r = spawnSync(command, args, { encoding: 'utf8', timeout, maxBuffer: 1 << 26 });
  if (r.error) throw new Error(`${what}: ${command} could not be run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`${what}: ${command} failed (${r.status ?? r.signal}):\n${(r.stderr ?? '').slice(-3000)}`);
  return r.stdout;
}

/** mkfs.ext4 of a folder's contents into a new image of `megabytes` (sparse: only what is written takes room). */
export function ext4Image(image: string, from: string, megabytes: number, label: string): void {
  rmSync(image, { force: true });
  run('mkfs.ext4', ['-q', '-F', '-L', label, '-d', from, image, `${megabytes}M`], `the ${label} image`);
}

/** Megabytes a folder's files take. */
function sizeMb(dir: string): number {
  return Number(run('du', ['-sm', dir], `the size of ${dir}`).split(/\s/)[0]);
}

/** Every file under a folder, by its name without `.ko` (dashes read as underscores, as the kernel does). */
function modulesByName(dir: string): Map<string, string> {
  const byName = new Map<string, string>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith('.ko')) byName.set(entry.name.slice(0, -3).replace(/-/g, '_'), join(entry.parentPath, entry.name));
  }
  return byName;
}

/** What a module says it depends on: the `depends=` of its .modinfo section. */
function dependsOf(file: string): string[] {
  const text = readFileSync(file).toString('latin1');
  const at = text.indexOf('\0depends=');
  if (at < 0) return [];
  const value = text.slice(at + '\0depends='.length, text.indexOf('\0', at + 1));
  return value.split(',').filter(Boolean).map((name) => name.replace(/-/g, '_'));
}

/** The modules wanted and everything they depend on, each after what it depends on. */
export function moduleOrder(wanted: string[], byName: Map<string, string>): string[] {
  const order: string[] = [];
  const visit = (name: string, path: string[]) => {
    if (order.includes(name)) return;
    if (path.includes(name)) throw new Error(`the guest's modules depend on each other in a circle: ${[...path, name].join(' → ')}`);
    const file = byName.get(name);
    // Not a module of the package: built into the kernel.
    if (!file) return;
    for (const dep of dependsOf(file)) visit(dep, [...path, name]);
    order.push(name);
  };
  for (const name of wanted) {
    if (!byName.has(name)) throw new Error(`the guest's kernel has no module ${name}`);
    visit(name, []);
  }
  return order;
}

/** One entry of a newc (SVR4, no checksum) archive: the format the kernel unpacks an initramfs from. */
function newcEntry(name: string, mode: number, data: Buffer = Buffer.alloc(0), rdev: [number, number] = [0, 0]): Buffer {
  const fields = [0, mode, 0, 0, 1, 0, data.length, 0, 0, rdev[0], rdev[1], name.length + 1, 0];
  const header = Buffer.from(`070701${fields.map((f) => f.toString(16).padStart(8, '0')).join('')}${name}\0`, 'latin1');
  const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((4 - (b.length % 4)) % 4)]);
  return Buffer.concat([pad(header), pad(data)]);
}

/** The initramfs: busybox, the modules in load order, /dev/console (so that init has a console) and the init. */
function initramfs(path: string, busybox: string, modules: Array<{ name: string; file: string }>): void {
  const dir = 0o040755;
  const file = 0o100644;
  const entries = [
    ...['bin', 'dev', 'lib', 'lib/modules', 'proc', 'root'].map((d) => newcEntry(d, dir)),
    newcEntry('dev/console', 0o020600, undefined, [5, 1]),
    newcEntry('bin/busybox', 0o100755, readFileSync(busybox)),
    ...modules.map((m) => newcEntry(`lib/modules/${m.name}.ko`, file, readFileSync(m.file))),
    newcEntry('init', 0o100755, Buffer.from(RDINIT(modules.map((m) => m.name)))),
  ].map((entry, i) => {
    // Distinct inode numbers: the kernel takes entries with the same one as hard links of each other.
    entry.write((i + 1).toString(16).padStart(8, '0'), 6, 'latin1');
    return entry;
  });
  writeFileSync(path, Buffer.concat([...entries, newcEntry('TRAILER!!!', 0)]));
}

const XZ_MAGIC = Buffer.from([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]);

/**
 * The kernel as the ELF file inside Debian's vmlinuz (xz-compressed there), which QEMU boots through its
 * PVH entry point: the emulator spends some ten seconds decompressing a vmlinuz at every boot, this
 * spends none.
 */
function unpackedKernel(vmlinuz: string): Buffer {
  const image = readFileSync(vmlinuz);
  const at = image.indexOf(XZ_MAGIC);
  if (at < 0) throw new Error(`the guest's kernel ${vmlinuz} holds no xz-compressed kernel`);
  // xz stops at the end of its stream and complains of what follows it (the image's trailer): its status says nothing here.
  const r = spawnSync('xz', ['--decompress', '--stdout', '--single-stream'], { input: image.subarray(at), maxBuffer: 1 << 30 });
  const elf = r.stdout ?? Buffer.alloc(0);
  if (elf.subarray(0, 4).toString('latin1') !== '\x7fELF') throw new Error(`the guest's kernel could not be unpacked from ${vmlinuz}: ${r.error?.message ?? r.stderr?.toString().slice(-500)}`);
  return elf;
}

function makeSystem(making: string, variant?: GuestVariant): void {
  const tree = join(making, 'tree');
  run('mmdebstrap', [...mmdebstrapArgs(variant), tree, ...SOURCES], 'mmdebstrap of the guest');
  const debs = readdirSync(join(tree, KERNEL_DEB_DIR)).filter((name) => name.endsWith('.deb'));
  if (debs.length !== 1) throw new Error(`the guest's kernel package was not downloaded (found: ${debs.join(', ') || 'nothing'})`);
  const kernelTree = join(making, 'kernel');
  run('dpkg-deb', ['--extract', join(tree, KERNEL_DEB_DIR, debs[0]!), kernelTree], "the guest's kernel package");
  rmSync(join(tree, KERNEL_DEB_DIR), { recursive: true, force: true });
  const vmlinuz = readdirSync(join(kernelTree, 'boot')).find((name) => name.startsWith('vmlinuz-'));
  if (!vmlinuz) throw new Error(`the guest's kernel package holds no vmlinuz: ${debs[0]}`);
  writeFileSync(join(making, 'vmlinux'), unpackedKernel(join(kernelTree, 'boot', vmlinuz)));
  const byName = modulesByName(join(kernelTree, 'lib/modules'));
  initramfs(join(making, 'initrd.img'), join(tree, 'bin/busybox'), moduleOrder(modulesOf(variant), byName).map((name) => ({ name, file: byName.get(name)! })));
  rmSync(kernelTree, { recursive: true, force: true });
  writeFileSync(join(tree, 'sbin/mesh-guest-init'), STUB, { mode: 0o755 });
  for (const dir of ['data', 'opt/mesh']) mkdirSync(join(tree, dir), { recursive: true });
  ext4Image(join(making, 'system.img'), tree, Math.ceil(sizeMb(tree) * 1.3) + 128, 'system');
  rmSync(tree, { recursive: true, force: true });
}

/**
 * The guest's system in `cache` (a folder the caller names), made when missing (a minute or two:
 * Debian's packages are fetched). A half-made one is never kept; others of older inputs unused for a
 * day are removed.
 */
export function guestSystem(cache: string, variant?: GuestVariant): GuestSystem {
  const dir = guestSystemPath(cache, variant);
  const system = { kernel: join(dir, 'vmlinux'), initrd: join(dir, 'initrd.img'), system: join(dir, 'system.img') };
  const ready = () => {
    if (!existsSync(system.system)) return false;
    utimesSync(dir, new Date(), new Date());
    return true;
  };
  if (ready()) return system;
  return withBuildLock(dir, () => {
    if (ready()) return system;
    const making = `${dir}.making-${process.pid}`;
    rmSync(making, { recursive: true, force: true });
    mkdirSync(making, { recursive: true });
    try {
      makeSystem(making, variant);
    } catch (err) {
      rmSync(making, { recursive: true, force: true });
      throw err;
    }
    renameSync(making, dir);
    dropStaleBuilds(prefixOf(variant), dir, cache);
    return system;
  });
}

/**
 * The tools disk of a run: the single executable as `mesh-host` (and any other files given), this
 * machine's node and the check (test/support/guest-check.ts, bundled into one file) that node runs.
 */
export async function toolsDisk(dir: string, files: Record<string, string>): Promise<string> {
  const tools = join(dir, 'tools');
  mkdirSync(tools, { recursive: true });
  for (const [name, from] of Object.entries(files)) {
    mkdirSync(dirname(join(tools, name)), { recursive: true });
    copyFileSync(from, join(tools, name));
  }
  copyFileSync(process.execPath, join(tools, 'node'));
  copyFileSync(INIT, join(tools, 'init'));
  chmodSync(join(tools, 'init'), 0o755);
  await build({
    entryPoints: [join(projectDir, 'test/support/guest-check.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: join(tools, 'check.mjs'),
    logLevel: 'error',
    // Packages some bundled modules load with require(): an ES module has none of its own.
    banner: { js: "import { createRequire as __meshRequire } from 'node:module'; const require = __meshRequire(import.meta.url);" },
  });
  const image = join(dir, 'tools.img');
  ext4Image(image, tools, sizeMb(tools) + 64, 'tools');
  rmSync(tools, { recursive: true, force: true });
  return image;
}

/** A boot's archive (the guest's fourth disk): `run.sh`, which the init runs, and the files it reads, under /run/boot. */
export function bootArchive(path: string, files: Record<string, string | Buffer>): string {
  const dir = `${path}.d`;
  rmSync(dir, { recursive: true, force: true });
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, name)), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  run('tar', ['--create', '--file', path, '--directory', dir, '--owner=0', '--group=0', '.'], 'the boot archive');
  rmSync(dir, { recursive: true, force: true });
  return path;
}

export interface GuestBootOptions {
  system: GuestSystem;
  /** The data disk (ext4, written by the guest). */
  data: string;
  tools: string;
  boot: string;
  /** A loopback port on this side the guest reaches as 10.0.2.100:4222 (nats-server), and nothing else. */
  natsPort?: number;
  memoryMb?: number;
}

/** A guest running: its serial console read line by line. */
export interface GuestBoot {
  pid: number;
  /** The console so far. */
  console(): string;
  /** The text after the first line that holds `MESH-GUEST:<marker>`, waited for. */
  waitFor(marker: string, timeoutMs?: number): Promise<string>;
  /** Every marked line's text after `MESH-GUEST:<marker>` so far. */
  marked(marker: string): string[];
  /** The guest powered itself off (or the emulator ended): its exit. */
  exited: Promise<number | null>;
  /** The power cut: SIGKILL to QEMU, resolved once it is gone. */
  cut(): Promise<void>;
}

const MARK = 'MESH-GUEST:';

/**
 * The QEMU command line. The user network with restrict=on reaches nothing outside; the one guestfwd
 * connects 10.0.2.100:4222 to this side's loopback port (through nc, one per connection).
 */
export function qemuArgs(o: GuestBootOptions): string[] {
  // net.ifnames=0: the card is eth0, as the init names it.
  // The initramfs's init mounts /dev/vda and runs /sbin/mesh-guest-init on it: no root= or init= to give.
  // cryptomgr.notests: the kernel's crypto self-tests skipped at boot: seconds of emulated work, and where a
  // boot on an overloaded machine once stalled its CPU (a soft lockup in cryptomgr_test) until it was given up.
  const append = ['console=ttyS0', 'quiet', 'panic=-1', 'net.ifnames=0', 'cryptomgr.notests'];
  const net = `user,id=n,restrict=on${o.natsPort ? `,guestfwd=tcp:10.0.2.100:4222-cmd:nc 127.0.0.1 ${o.natsPort}` : ''}`;
  return [
    '-accel', 'tcg,thread=multi', '-cpu', 'max', '-m', String(o.memoryMb ?? 1024), '-smp', '2',
    '-nographic', '-nodefaults', '-serial', 'stdio', '-no-reboot',
    // qboot (QEMU's own, in qemu-system-data) rather than SeaBIOS: a firmware that only loads the kernel.
    '-bios', '/usr/share/qemu/qboot.rom',
    '-kernel', o.system.kernel, '-initrd', o.system.initrd, '-append', append.join(' '),
    '-drive', `file=${o.system.system},format=raw,if=virtio,readonly=on`,
    // cache=unsafe: the guest's flushes are not passed on as fdatasync of the image (a third of a 2,000-file
    // apply's time here). A cut is the emulator killed, not this machine: every write the guest's disk
    // completed is in this machine's page cache either way, so what a cut keeps and loses is the same as with
    // cache=writeback or none (checked: an fsynced file survived every kill under all three, one not synced
    // was lost every time).
    '-drive', `file=${o.data},format=raw,if=virtio,cache=unsafe`,
    '-drive', `file=${o.tools},format=raw,if=virtio,readonly=on`,
    '-drive', `file=${o.boot},format=raw,if=virtio,readonly=on`,
    // romfile= : no network boot firmware (iPXE) to load and wait for.
    '-netdev', net, '-device', 'virtio-net-pci,netdev=n,romfile=',
    // The virtio devices without MSI-X (one legacy interrupt line each): Debian's QEMU 7.2 under its
    // emulator once aborted a boot on its own assertion in the MSI-X table's read
    // (msix_table_mmio_read: `addr + size <= dev->msix_entries_nr * PCI_MSIX_ENTRY_SIZE`), a power cut
    // of the emulator's making; with no table that code is never reached.
    '-global', 'virtio-blk-pci.vectors=0', '-global', 'virtio-net-pci.vectors=0',
  ];
}

/** MESH_GUEST_CONSOLES=DIR keeps every boot's console in DIR, one file a boot, for a look at what a guest said. */
let boots = 0;

export function bootGuest(o: GuestBootOptions): GuestBoot {
  const proc = spawn('qemu-system-x86_64', qemuArgs(o), { stdio: ['ignore', 'pipe', 'pipe'] });
  const kept = process.env.MESH_GUEST_CONSOLES ? join(process.env.MESH_GUEST_CONSOLES, `${process.pid}-${++boots}-${basename(o.boot)}.log`) : undefined;
  if (kept) mkdirSync(dirname(kept), { recursive: true });
  let text = '';
  const waiters = new Set<() => void>();
  const heard = (d: Buffer) => {
    text += d.toString('latin1');
    if (kept) appendFileSync(kept, d);
    for (const w of waiters) w();
  };
  proc.stdout.on('data', heard);
  proc.stderr.on('data', heard);
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => {
    for (const w of waiters) w();
    resolve(code);
  }));
  const marked = (marker: string) => text.split('\n').flatMap((line) => {
    const at = line.indexOf(`${MARK}${marker}`);
    return at < 0 ? [] : [line.slice(at + MARK.length + marker.length).trim()];
  });
  return {
    pid: proc.pid!,
    console: () => text,
    marked,
    waitFor(marker, timeoutMs = 180_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          // A line counts once it is whole.
          const lines = text.slice(0, text.lastIndexOf('\n') + 1);
          const at = lines.indexOf(`${MARK}${marker}`);
          if (at >= 0) {
            done();
            const start = at + MARK.length + marker.length;
            resolve(lines.slice(start, lines.indexOf('\n', start)).trim());
          } else if (proc.exitCode !== null || proc.signalCode !== null) {
            done();
            reject(new Error(`the guest ended before ${MARK}${marker}:\n${text.slice(-4000)}`));
          }
        };
        const timer = setTimeout(() => {
          done();
          // A guest that did not get there in time is given up: its emulator is ended, never left running.
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
          reject(new Error(`no ${MARK}${marker} from the guest after ${timeoutMs} ms:\n${text.slice(-4000)}`));
        }, timeoutMs);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    exited,
    async cut() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}

/** Boots, waits for the guest to power itself off, and gives its console; throws if it did not end cleanly within the time. */
export async function bootToEnd(o: GuestBootOptions, timeoutMs = 600_000): Promise<GuestBoot> {
  const guest = bootGuest(o);
  await guest.waitFor('done', timeoutMs).catch(async (err: unknown) => {
    await guest.cut();
    throw err;
  });
  await guest.exited;
  return guest;
}

/** A copy of a disk image (sparse), so that each cut starts from the same prepared disk. */
export function copyDisk(from: string, to: string): string {
  rmSync(to, { force: true });
  run('cp', ['--sparse=always', from, to], `a copy of ${from}`);
  return to;
}

