import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Before, Node, Op } from './powercut-trace.js';

/*
 * The power-cut model (docs/design.md, "Power cuts, simulated"). What reaches the disk of what a
 * program did, at a cut after its first k operations:
 * - a file's data (its writes and truncations) is on the disk up to its last fsync; of what came after,
 *   any prefix may be, and the last write of that prefix may be torn (only its first half written);
 * - a directory's entries (creations, renames into it, unlinks, mkdir, rmdir, links) are on the disk up
 *   to its last fsync; of what came after, any prefix may be (a rename or unlink not fsynced is undone);
 * - each file and each directory chooses apart from the others: the disk may write them in any order.
 * A rename across directories counts as an entry of the directory it lands in.
 */

/** What one file's data or one directory's entries came to, at the cut: how many of its operations, the last torn or not. */
type Choice = { count: number; torn: boolean };

interface Unit {
  /** The operations (indices into the record) that belong to this file or directory, in order. */
  ops: number[];
}

/** Which file or directory each operation belongs to: `i:INO` a file's data, `d:INO` a directory's entries. */
export function unitsOf(before: Before, ops: Op[]): string[] {
  const live = new Map(before.paths);
  const parent = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
  const dirOf = (p: string) => `d:${live.get(parent(p)) ?? `?${parent(p)}`}`;
  return ops.map((op) => {
    switch (op.kind) {
      case 'write':
      case 'truncate':
        return `i:${op.ino}`;
      case 'fsync':
        return `s:${op.ino}`;
      case 'create':
      case 'mkdir':
      case 'symlink': {
        const u = dirOf(op.path);
        live.set(op.path, op.ino);
        return u;
      }
      case 'link': {
        const u = dirOf(op.path);
        const ino = live.get(op.from);
        if (ino !== undefined) live.set(op.path, ino);
        return u;
      }
      case 'rename': {
        const u = dirOf(op.path);
        for (const [k, v] of [...live]) {
          if (k === op.path || k.startsWith(`${op.path}/`)) live.delete(k);
          if (k === op.from || k.startsWith(`${op.from}/`)) {
            live.delete(k);
            live.set(op.path + k.slice(op.from.length), v);
          }
        }
        return u;
      }
      case 'unlink':
      case 'rmdir': {
        const u = dirOf(op.path);
        for (const k of [...live.keys()]) if (k === op.path || k.startsWith(`${op.path}/`)) live.delete(k);
        return u;
      }
    }
  });
}

/** A crash state: for each file and directory with work not yet durable, what of it reached the disk. */
export type CrashState = Map<string, Choice>;

/** The choices each unit has at a cut after `k` operations (only units with more than one). */
export function choicesAt(ops: Op[], units: string[], k: number): Map<string, Choice[]> {
  const byUnit = new Map<string, Unit & { durable: number }>();
  for (let i = 0; i < k; i++) {
    const u = units[i]!;
    if (u.startsWith('s:')) {
      // An fsync makes the file's data durable, and a directory's entries.
      const ino = u.slice(2);
      for (const key of [`i:${ino}`, `d:${ino}`]) {
        const unit = byUnit.get(key);
        if (unit) unit.durable = unit.ops.length;
      }
      continue;
    }
    const unit = byUnit.get(u) ?? { ops: [], durable: 0 };
    unit.ops.push(i);
    byUnit.set(u, unit);
  }
  const out = new Map<string, Choice[]>();
  for (const [key, unit] of byUnit) {
    const choices: Choice[] = [];
    for (let count = unit.durable; count <= unit.ops.length; count++) {
      choices.push({ count, torn: false });
      const last = count > unit.durable ? ops[unit.ops[count - 1]!]! : undefined;
      if (last?.kind === 'write' && last.bytes.length >= 2) choices.push({ count, torn: true });
    }
    if (choices.length > 1) out.set(key, choices);
  }
  return out;
}

/** Past this many combinations at one cut, each choice is taken against the others all kept, and all lost. */
export const EXHAUSTIVE_LIMIT = 4096;

/**
 * Every crash state the model allows at a cut (when there are at most EXHAUSTIVE_LIMIT), else each
 * choice of each unit with every other unit at its most and at its least; with whether that was all.
 */
export function* crashStates(choices: Map<string, Choice[]>): Generator<CrashState> {
  const keys = [...choices.keys()];
  const total = keys.reduce((n, k) => n * choices.get(k)!.length, 1);
  if (total <= EXHAUSTIVE_LIMIT) {
    for (let n = 0; n < total; n++) {
      const state: CrashState = new Map();
      let rest = n;
      for (const k of keys) {
        const list = choices.get(k)!;
        state.set(k, list[rest % list.length]!);
        rest = Math.floor(rest / list.length);
      }
      yield state;
    }
    return;
  }
  for (const extreme of ['most', 'least'] as const) {
    const pick = (list: Choice[]) => (extreme === 'most' ? list.at(-1)! : list[0]!);
    for (const k of keys) {
      for (const c of choices.get(k)!) {
        const state: CrashState = new Map(keys.map((o) => [o, o === k ? c : pick(choices.get(o)!)]));
        yield state;
      }
    }
  }
}

/** How many crash states crashStates gives at a cut. */
export function crashStateCount(choices: Map<string, Choice[]>): number {
  const lists = [...choices.values()];
  const total = lists.reduce((n, l) => n * l.length, 1);
  return total <= EXHAUSTIVE_LIMIT ? total : 2 * lists.reduce((n, l) => n + l.length, 0);
}

/** The tree a cut after `k` operations leaves in a crash state: the operations that reached the disk, replayed on the tree before. */
export function treeAt(before: Before, ops: Op[], units: string[], k: number, state: CrashState): { paths: Map<string, number>; nodes: Map<number, Node> } {
  const paths = new Map(before.paths);
  const nodes = new Map(before.nodes);
  const seen = new Map<string, number>();
  const file = (ino: number): Extract<Node, { type: 'file' }> => {
    const n = nodes.get(ino);
    if (n?.type === 'file') return n;
    const made = { type: 'file' as const, bytes: Buffer.alloc(0), mode: 0o644 };
    nodes.set(ino, made);
    return made;
  };
  const parent = (p: string) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '');
  const reachable = (p: string) => paths.has(parent(p));
  const drop = (p: string) => {
    for (const key of [...paths.keys()]) if (key === p || key.startsWith(`${p}/`)) paths.delete(key);
  };
  for (let i = 0; i < k; i++) {
    const op = ops[i]!;
    const u = units[i]!;
    if (u.startsWith('s:')) continue;
    const position = seen.get(u) ?? 0;
    seen.set(u, position + 1);
    const choice = state.get(u);
    if (choice && position >= choice.count) continue;
    const torn = choice?.torn === true && position === choice.count - 1;
    switch (op.kind) {
      case 'write': {
        const f = file(op.ino);
        const bytes = torn ? op.bytes.subarray(0, op.bytes.length >> 1) : op.bytes;
        const grown = Buffer.alloc(Math.max(f.bytes.length, op.offset + bytes.length));
        f.bytes.copy(grown);
        bytes.copy(grown, op.offset);
        nodes.set(op.ino, { ...f, bytes: grown });
        break;
      }
      case 'truncate': {
        const f = file(op.ino);
        const cut = Buffer.alloc(op.size);
        f.bytes.copy(cut, 0, 0, Math.min(op.size, f.bytes.length));
        nodes.set(op.ino, { ...f, bytes: cut });
        break;
      }
      case 'create':
        if (!reachable(op.path)) break;
        nodes.set(op.ino, { ...file(op.ino), mode: op.mode });
        paths.set(op.path, op.ino);
        break;
      case 'mkdir':
        if (!reachable(op.path)) break;
        nodes.set(op.ino, { type: 'dir', mode: op.mode });
        paths.set(op.path, op.ino);
        break;
      case 'symlink':
        if (!reachable(op.path)) break;
        nodes.set(op.ino, { type: 'symlink', target: op.target });
        paths.set(op.path, op.ino);
        break;
      case 'link': {
        const ino = paths.get(op.from);
        if (ino !== undefined && reachable(op.path)) paths.set(op.path, ino);
        break;
      }
      case 'rename': {
        if (!paths.has(op.from) || !reachable(op.path)) break;
        const moved = [...paths].filter(([key]) => key === op.from || key.startsWith(`${op.from}/`));
        drop(op.from);
        drop(op.path);
        for (const [key, ino] of moved) paths.set(op.path + key.slice(op.from.length), ino);
        break;
      }
      case 'unlink':
      case 'rmdir':
        drop(op.path);
        break;
    }
  }
  return { paths, nodes };
}

/** Writes a tree into an empty folder. */
export function materialize(dir: string, tree: { paths: Map<string, number>; nodes: Map<number, Node> }): void {
  for (const [rel, ino] of [...tree.paths].sort(([a], [b]) => a.split('/').length - b.split('/').length || a.localeCompare(b))) {
    const node = tree.nodes.get(ino)!;
    const full = rel ? join(dir, rel) : dir;
    if (node.type === 'dir') {
      mkdirSync(full, { recursive: true });
      chmodSync(full, node.mode);
    } else if (node.type === 'symlink') symlinkSync(node.target, full);
    else writeFileSync(full, node.bytes, { mode: node.mode });
  }
}
