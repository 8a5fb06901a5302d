import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemRunner, type RunResult } from '../../src/core/system/runner.js';
import { dropStaleBuilds, withBuildLockAsync } from './build-lock.js';

/**
 * Running linux-arm64 executables on this (x86-64) machine: Debian's qemu-user-static emulates the CPU,
 * and the arm64 C libraries a dynamically linked node needs come from a library root of Debian's own arm64
 * packages, unpacked (not installed: nothing of arm64 runs to make it) by mmdebstrap's extract variant.
 * qemu is told the root with -L and is run explicitly: no binfmt handler is registered, and dpkg of this
 * machine never learns of a second architecture.
 */

const QEMU = 'qemu-aarch64-static';
/** What node links against: glibc, libstdc++ and libgcc_s, from Debian 12 with its security updates. */
const MMDEBSTRAP = ['--variant=extract', '--arch=arm64', '--include=libc6,libstdc++6,libgcc-s1', 'bookworm'];
const SOURCES = ['deb http://deb.debian.org/debian bookworm main', 'deb http://deb.debian.org/debian-security bookworm-security main'];
const PREFIX = 'mesh-host-arm64-libs-';

/** Why arm64 executables cannot be run here, or undefined when they can. */
export function emulationUnavailable(): string | undefined {
  if (spawnSync(QEMU, ['--version']).error) return `${QEMU} is not installed (apt-get install qemu-user-static)`;
  if (spawnSync('mmdebstrap', ['--version']).error) return 'mmdebstrap is not installed (apt-get install mmdebstrap)';
  if (spawnSync('aarch64-linux-gnu-strip', ['--version']).error) return 'aarch64-linux-gnu-strip is not installed (apt-get install binutils-aarch64-linux-gnu)';
  return undefined;
}

/**
 * The arm64 library root, made once (by a child process: the test goes on meanwhile) and kept in the temporary folder (mesh-host-arm64-libs-DIGEST, the
 * digest of how it is made) for later runs and other test files; roots made otherwise before are dropped
 * after a day unused.
 */
export async function arm64LibraryRoot(): Promise<string> {
  const digest = createHash('sha256').update(JSON.stringify({ MMDEBSTRAP, SOURCES })).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `${PREFIX}${digest}`);
  const loader = join(dir, 'lib/ld-linux-aarch64.so.1');
  if (existsSync(loader)) return dir;
  return withBuildLockAsync(dir, async () => {
    if (existsSync(loader)) return dir;
    const making = `${dir}.making-${process.pid}`;
    rmSync(making, { recursive: true, force: true });
    const made = await systemRunner().run('mmdebstrap', [...MMDEBSTRAP, making, ...SOURCES], { timeoutMs: 600_000 });
    if (made.failure?.kind === 'missing') throw new Error(`mmdebstrap could not be run (apt-get install mmdebstrap): ${made.failure.message}`);
    if (made.code !== 0 || !existsSync(join(making, 'lib/ld-linux-aarch64.so.1'))) {
      rmSync(making, { recursive: true, force: true });
      throw new Error(`mmdebstrap could not unpack arm64's C libraries (${made.code ?? made.failure?.message}):\n${made.stderr.slice(-3000)}`);
    }
    renameSync(making, dir);
    dropStaleBuilds(PREFIX, dir);
    return dir;
  });
}

/** ELF's machine number of an executable (62 x86-64, 183 AArch64). */
export function elfMachine(path: string): number {
  const header = readFileSync(path).subarray(0, 20);
  if (header.subarray(0, 4).toString('latin1') !== '\x7fELF') throw new Error(`${path} is not an ELF file`);
  return header.readUInt16LE(18);
}

/**
 * The single-executable blob injected into an executable: its size and flags. postject puts it in an ELF
 * note named NODE_SEA_BLOB (name size, blob size, type, the name padded to 16 bytes, the blob), and Node's
 * blob begins with its magic number and then its flags.
 */
export function seaBlob(path: string): { bytes: number; codeCache: boolean; snapshot: boolean } {
  const bytes = readFileSync(path);
  const magic = Buffer.alloc(4);
  magic.writeUInt32LE(0x143da20);
  const at = bytes.indexOf(Buffer.concat([Buffer.from('NODE_SEA_BLOB\0\0\0', 'latin1'), magic]));
  if (at < 12) throw new Error(`${path} carries no single-executable blob`);
  const flags = bytes.readUInt32LE(at + 20);
  return { bytes: bytes.readUInt32LE(at - 8), snapshot: (flags & 2) !== 0, codeCache: (flags & 4) !== 0 };
}

/** Runs an arm64 executable under qemu with the library root; argv[0] is `executable` as given (a link's name chooses the program). */
export function runArm64(libs: string, executable: string, args: string[], options: { timeoutMs?: number } = {}): Promise<RunResult> {
  return systemRunner().run(QEMU, ['-L', libs, executable, ...args], { timeoutMs: options.timeoutMs ?? 60_000 });
}
