import { spawnSync } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * An apply's durable life as the kernel saw it: every call that changes a file's data or a directory's
 * entries, or asks for them to reach the disk, under one folder (the scratch root and state directory),
 * in the order the calls returned. Recorded with strace from the real program, as ALICE records an
 * application's system calls: nothing in the host is replaced or told it is watched.
 */
export type Op =
  | { kind: 'create'; path: string; ino: number; mode: number }
  | { kind: 'mkdir'; path: string; ino: number; mode: number }
  | { kind: 'symlink'; path: string; ino: number; target: string }
  | { kind: 'link'; from: string; path: string }
  | { kind: 'write'; ino: number; offset: number; bytes: Buffer }
  | { kind: 'truncate'; ino: number; size: number }
  | { kind: 'fsync'; ino: number }
  | { kind: 'rename'; from: string; path: string }
  | { kind: 'unlink'; path: string }
  | { kind: 'rmdir'; path: string };

/** An inode of the tree: a file's bytes, a directory, or a link's target. */
export type Node = { type: 'file'; bytes: Buffer; mode: number } | { type: 'dir'; mode: number } | { type: 'symlink'; target: string };

/** The tree before the recorded work: every path under the base (relative, '' for the base), each with its inode. */
export interface Before {
  paths: Map<string, number>;
  nodes: Map<number, Node>;
}

export interface Recording {
  base: string;
  before: Before;
  ops: Op[];
}

const TRACED = 'open,openat,creat,write,pwrite64,writev,pwritev,pwritev2,ftruncate,truncate,fsync,fdatasync,rename,renameat,renameat2,unlink,unlinkat,mkdir,mkdirat,rmdir,link,linkat,symlink,symlinkat,copy_file_range,sendfile,lseek';

/** Reads a tree into memory: what a power cut starts from. */
export function readBefore(base: string): Before {
  const paths = new Map<string, number>();
  const nodes = new Map<number, Node>();
  let next = 1;
  const walk = (rel: string) => {
    const full = join(base, rel);
    const st = lstatSync(full);
    const ino = next++;
    paths.set(rel, ino);
    if (st.isSymbolicLink()) nodes.set(ino, { type: 'symlink', target: readlinkSync(full) });
    else if (st.isDirectory()) {
      nodes.set(ino, { type: 'dir', mode: st.mode & 0o7777 });
      for (const name of readdirSync(full).sort()) walk(rel ? `${rel}/${name}` : name);
    } else nodes.set(ino, { type: 'file', bytes: readFileSync(full), mode: st.mode & 0o7777 });
  };
  walk('');
  return { paths, nodes };
}

/** Runs a command under strace and returns what it did durably under `base` (its exit code, to check it ran). */
export function record(base: string, command: string[], env: NodeJS.ProcessEnv = {}): Recording & { code: number | null; stderr: string } {
  const before = readBefore(base);
  const log = join(mkdtempSync(join(tmpdir(), 'mesh-host-powercut-')), 'log');
  try {
    const r = spawnSync('strace', ['-f', '-qq', '-yy', '-xx', '-s', String(1 << 24), '-o', log, '-e', `trace=${TRACED}`, ...command], {
      encoding: 'utf8',
      env: { ...process.env, UV_USE_IO_URING: '0', ...env },
      maxBuffer: 1 << 28,
    });
    if (r.error) throw new Error(`strace could not run: ${r.error.message}`);
    const ops = parseTrace(readFileSync(log, 'latin1'), base, before);
    return { base, before, ops, code: r.status, stderr: r.stderr };
  } finally {
    rmSync(dirname(log), { recursive: true, force: true });
  }
}

/** A mode argument (octal, as strace prints it), less the usual umask. */
const modeArg = (arg: string | undefined) => (arg && /^0[0-7]+$/.test(arg) ? parseInt(arg, 8) : 0o666) & ~0o022;

const unhex = (s: string) => Buffer.from(s.replace(/\\x([0-9a-f]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');

/** strace's lines with -f, an unfinished call joined to its resumption, in the order the calls returned. */
function completedCalls(text: string): Array<{ call: string; args: string; ret: string }> {
  const open = new Map<string, string>();
  const out: Array<{ call: string; args: string; ret: string }> = [];
  for (const raw of text.split('\n')) {
    const m = /^(\d+)\s+(.*)$/.exec(raw);
    if (!m) continue;
    const [, tid, rest] = m as unknown as [string, string, string];
    let line = rest;
    if (line.endsWith('<unfinished ...>')) {
      open.set(tid, line.slice(0, -'<unfinished ...>'.length).trimEnd());
      continue;
    }
    const resumed = /^<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed) {
      line = `${open.get(tid) ?? ''}${resumed[1]}`;
      open.delete(tid);
    }
    const call = /^(\w+)\((.*)\)\s+=\s+(.*)$/.exec(line);
    if (call) out.push({ call: call[1]!, args: call[2]!, ret: call[3]! });
  }
  return out;
}

/** The arguments of a call, split at top-level commas (strings hold no bare commas: -xx escapes every byte). */
function splitArgs(args: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of args) {
    if ('[{<'.includes(ch)) depth++;
    if (']}>'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/**
 * Turns the calls into operations on paths relative to the base, following descriptors (opened here,
 * or named as /proc/self/fd/N/NAME, as the host's rooted writes name them) and inodes across renames.
 */
export function parseTrace(text: string, base: string, before: Before): Op[] {
  const live = new Map(before.paths);
  let nextIno = Math.max(0, ...before.nodes.keys()) + 1;
  const fdPath = new Map<number, string>();
  const fdIno = new Map<number, number>();
  const fdPos = new Map<number, number>();
  const sizes = new Map<number, number>([...before.nodes].flatMap(([ino, n]) => (n.type === 'file' ? [[ino, n.bytes.length] as [number, number]] : [])));
  const ops: Op[] = [];
  const rel = (abs: string): string | undefined => (abs === base ? '' : abs.startsWith(`${base}/`) ? abs.slice(base.length + 1) : undefined);
  const noteFds = (s: string) => {
    for (const m of s.matchAll(/(\d+)<((?:\\x[0-9a-f]{2})+)>/g)) fdPath.set(Number(m[1]), unhex(m[2]!).toString('latin1'));
  };
  /** A path argument: a string, relative to a descriptor (AT_FDCWD's is the cwd strace shows), with /proc/self/fd/N resolved. */
  const pathOf = (dirArg: string | undefined, strArg: string): string | undefined => {
    let p = unhex(strArg.replace(/^"|"$/g, '')).toString('latin1');
    const proc = /^\/proc\/self\/fd\/(\d+)(\/.*)?$/.exec(p);
    if (proc) p = `${fdPath.get(Number(proc[1])) ?? '?'}${proc[2] ?? ''}`;
    else if (!p.startsWith('/') && dirArg) {
      const d = /<((?:\\x[0-9a-f]{2})+)>/.exec(dirArg);
      p = `${d ? unhex(d[1]!).toString('latin1') : '?'}/${p}`;
    }
    return rel(p);
  };
  const fdOf = (arg: string) => {
    const m = /^(\d+)<((?:\\x[0-9a-f]{2})+)>$/.exec(arg);
    return m ? { fd: Number(m[1]), path: rel(unhex(m[2]!).toString('latin1')) } : undefined;
  };
  const inoAt = (p: string) => live.get(p);
  const dropUnder = (p: string) => {
    for (const k of [...live.keys()]) if (k === p || k.startsWith(`${p}/`)) live.delete(k);
  };
  const moveUnder = (from: string, to: string) => {
    dropUnder(to);
    for (const [k, v] of [...live]) {
      if (k === from || k.startsWith(`${from}/`)) {
        live.delete(k);
        live.set(to + k.slice(from.length), v);
      }
    }
  };
  for (const { call, args, ret } of completedCalls(text)) {
    noteFds(args);
    noteFds(ret);
    if (!/^\d/.test(ret)) continue;
    const a = splitArgs(args);
    switch (call) {
      case 'open':
      case 'openat':
      case 'creat': {
        const path = call === 'openat' ? pathOf(a[0], a[1]!) : pathOf(undefined, a[0]!);
        const fd = Number(/^(\d+)/.exec(ret)![1]);
        fdIno.delete(fd);
        fdPos.set(fd, 0);
        if (path === undefined) break;
        const flags = call === 'creat' ? 'O_CREAT|O_TRUNC' : (call === 'openat' ? a[2] : a[1]) ?? '';
        let ino = inoAt(path);
        if (ino === undefined && flags.includes('O_CREAT')) {
          ino = nextIno++;
          live.set(path, ino);
          sizes.set(ino, 0);
          ops.push({ kind: 'create', path, ino, mode: modeArg(call === 'openat' ? a[3] : call === 'creat' ? a[1] : a[2]) });
        } else if (ino !== undefined && flags.includes('O_TRUNC') && (sizes.get(ino) ?? 0) > 0) {
          sizes.set(ino, 0);
          ops.push({ kind: 'truncate', ino, size: 0 });
        }
        if (ino !== undefined) fdIno.set(fd, ino);
        if (ino !== undefined && flags.includes('O_APPEND')) fdPos.set(fd, sizes.get(ino) ?? 0);
        break;
      }
      case 'write':
      case 'pwrite64': {
        const f = fdOf(a[0]!);
        if (!f || f.path === undefined) break;
        const ino = fdIno.get(f.fd) ?? inoAt(f.path);
        if (ino === undefined) break;
        const n = Number(ret.split(' ')[0]);
        const bytes = unhex(a[1]!.replace(/^"|"$/g, '')).subarray(0, n);
        const offset = call === 'pwrite64' ? Number(a[3]) : fdPos.get(f.fd) ?? 0;
        if (call === 'write') fdPos.set(f.fd, offset + n);
        sizes.set(ino, Math.max(sizes.get(ino) ?? 0, offset + n));
        ops.push({ kind: 'write', ino, offset, bytes });
        break;
      }
      case 'lseek': {
        const f = fdOf(a[0]!);
        if (f) fdPos.set(f.fd, Number(ret.split(' ')[0]));
        break;
      }
      case 'ftruncate':
      case 'truncate': {
        const f = call === 'ftruncate' ? fdOf(a[0]!) : undefined;
        const path = f ? f.path : pathOf(undefined, a[0]!);
        if (path === undefined) break;
        const ino = (f && fdIno.get(f.fd)) ?? inoAt(path);
        if (ino === undefined) break;
        sizes.set(ino, Number(a[1]));
        ops.push({ kind: 'truncate', ino, size: Number(a[1]) });
        break;
      }
      case 'fsync':
      case 'fdatasync': {
        const f = fdOf(a[0]!);
        if (!f || f.path === undefined) break;
        const ino = fdIno.get(f.fd) ?? inoAt(f.path);
        if (ino !== undefined) ops.push({ kind: 'fsync', ino });
        break;
      }
      case 'rename':
      case 'renameat':
      case 'renameat2': {
        const [from, path] = call === 'rename' ? [pathOf(undefined, a[0]!), pathOf(undefined, a[1]!)] : [pathOf(a[0], a[1]!), pathOf(a[2], a[3]!)];
        if (from === undefined || path === undefined) break;
        moveUnder(from, path);
        ops.push({ kind: 'rename', from, path });
        break;
      }
      case 'unlink':
      case 'unlinkat':
      case 'rmdir': {
        const path = call === 'unlinkat' ? pathOf(a[0], a[1]!) : pathOf(undefined, a[0]!);
        if (path === undefined) break;
        const dir = call === 'rmdir' || (call === 'unlinkat' && (a[2] ?? '').includes('AT_REMOVEDIR'));
        dropUnder(path);
        ops.push(dir ? { kind: 'rmdir', path } : { kind: 'unlink', path });
        break;
      }
      case 'mkdir':
      case 'mkdirat': {
        const path = call === 'mkdirat' ? pathOf(a[0], a[1]!) : pathOf(undefined, a[0]!);
        if (path === undefined) break;
        const ino = nextIno++;
        live.set(path, ino);
        ops.push({ kind: 'mkdir', path, ino, mode: modeArg(call === 'mkdirat' ? a[2] : a[1]) });
        break;
      }
      case 'symlink':
      case 'symlinkat': {
        const target = unhex(a[0]!.replace(/^"|"$/g, '')).toString('latin1');
        const path = call === 'symlinkat' ? pathOf(a[1], a[2]!) : pathOf(undefined, a[1]!);
        if (path === undefined) break;
        const ino = nextIno++;
        live.set(path, ino);
        ops.push({ kind: 'symlink', path, ino, target });
        break;
      }
      case 'link':
      case 'linkat': {
        const [from, path] = call === 'link' ? [pathOf(undefined, a[0]!), pathOf(undefined, a[1]!)] : [pathOf(a[0], a[1]!), pathOf(a[2], a[3]!)];
        if (from === undefined || path === undefined) break;
        const ino = inoAt(from);
        if (ino !== undefined) live.set(path, ino);
        ops.push({ kind: 'link', from, path });
        break;
      }
      default: {
        // A write the model does not follow, under the base: the recording would be wrong, so it says so.
        const touched = [...args.matchAll(/<((?:\\x[0-9a-f]{2})+)>/g)].some((m) => rel(unhex(m[1]!).toString('latin1')) !== undefined);
        if (touched) throw new Error(`the power-cut model does not follow ${call} under ${base}: ${call}(${args.slice(0, 200)})`);
      }
    }
  }
  return ops;
}
