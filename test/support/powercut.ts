import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { JOURNAL_DIR } from '../../src/kinds/archive/journal.js';
import { join } from 'node:path';
import { openStore } from '../../src/engine/apply/open-store.js';
import { acquireLock } from '../../src/core/store/store-lock.js';
import { Outbox } from '../../src/engine/report/outbox.js';
import { silentLogger } from '../../src/core/system/log.js';
import { leaks } from './leaks.js';
import { withCallsInTurn } from './calls-in-turn.js';
import { choicesAt, crashStates, materialize, treeAt, unitsOf } from './powercut-model.js';
import type { Recording } from './powercut-trace.js';

export interface CutsChecked {
  /** Operations recorded (cut points: one after each, and one before the first). */
  ops: number;
  /** Crash states the model allows (bounded where they were too many, see below). */
  states: number;
  /** Distinct trees among them, each checked. */
  trees: number;
  /** Trees built and settled by the host's code: the others differ from one of them only in the bytes of files under the root (see settleKey). */
  settled: number;
  /** Cuts at which the combinations were too many to take all (each choice was taken against the others' extremes). */
  bounded: number;
  /** What was wrong, each with the cut and the state that showed it (the first few). */
  problems: string[];
}

export interface CheckOptions {
  reportsBefore?: number;
  maxProblems?: number;
  /**
   * Settle every tree, even one whose settle another shares, and say where the two settled trees differ
   * (the state directory's bytes, the paths): what holds the sharing to its premise (see settleKey).
   */
  proveSharing?: boolean;
}

/**
 * Every cut point of a recording (before each operation and after the last), every tree the model
 * allows there, each settled as the host's next start settles it (the store opened, an apply cut short
 * finished or undone, temporaries removed) and checked: the store opens; the root holds what the host
 * found and what the store records, no more and no less; nothing is left in the state directory the
 * store does not account for (a temporary among them); no report the store counts is missing from the
 * outbox (the sequence moves on past any the outbox holds, so none is reused). The base holds `root/`
 * and `state/`; `reportsBefore` reports were made (none sent) before the recording. Each tree is built in the
 * base itself (what the host wrote names the root by its path): the base is left empty.
 *
 * Trees that differ only in the bytes of files under the root share one settle: neither the start nor
 * the check reads those bytes (the start reaches the root only to finish or undo an apply's intents, by
 * lstat, unlink, rmdir, chmod and rename; the check lists the root's paths), so what one such tree
 * settles to, all do. Half of a 50-file apply's trees are such, and the settle is nearly all of a tree's
 * cost. `proveSharing` settles them all to show it.
 */
export async function checkEveryCut(rec: Recording, options: CheckOptions = {}): Promise<CutsChecked> {
  const units = unitsOf(rec.before, rec.ops);
  const out: CutsChecked = { ops: rec.ops.length, states: 0, trees: 0, settled: 0, bounded: 0, problems: [] };
  const checked = new Set<string>();
  const settles = new Map<string, Settled>();
  const settle = settlerOf(rec, options);
  try {
    for (let k = 0; k <= rec.ops.length; k++) {
      const choices = choicesAt(rec.ops, units, k);
      const all = [...choices.values()].reduce((n, l) => n * l.length, 1);
      if (all > 4096) out.bounded++;
      for (const state of crashStates(choices)) {
        out.states++;
        const tree = treeAt(rec.before, rec.ops, units, k, state);
        // Two states that leave the same tree (a file's data on a name no longer reachable, say) are one check.
        const { whole, settling } = treeKeys(tree);
        if (checked.has(whole)) continue;
        checked.add(whole);
        out.trees++;
        const wrong = await settledOnce(settles, settling, () => settle(tree), options.proveSharing === true);
        if (wrong.length === 0 || out.problems.length >= (options.maxProblems ?? 10)) continue;
        const op = rec.ops[k - 1];
        const chosen = [...state].filter(([, c]) => c.count > 0 || c.torn).map(([u, c]) => `${u}=${c.count}${c.torn ? ' torn' : ''}`);
        out.problems.push(`cut after op ${k}${op ? ` (${describe(op)})` : ''} [${chosen.join(', ')}]: ${wrong.join('; ')}`);
      }
    }
  } finally {
    empty(rec.base);
  }
  out.settled = settles.size;
  return out;
}

/** What a tree settled to: what was wrong, and (when sharing is proved) the settled tree's paths and state bytes. */
interface Settled {
  problems: string[];
  fingerprint?: string;
}

/** Builds a tree in the recorded base (emptied first) and settles it as the next start would; with the settled tree's fingerprint when asked. */
function settlerOf(rec: Recording, options: CheckOptions): (tree: ReturnType<typeof treeAt>) => Promise<Settled> {
  const found = new Set<string>();
  for (const p of rec.before.paths.keys()) {
    if (p === 'root') found.add('/');
    else if (p.startsWith('root/')) found.add(p.slice(4));
  }
  return async (tree) => {
    empty(rec.base);
    materialize(rec.base, tree);
    const problems = await withCallsInTurn(() => settledProblems(rec.base, found, options.reportsBefore ?? 0));
    return { problems, fingerprint: options.proveSharing ? fingerprint(rec.base) : undefined };
  };
}

/** A tree's problems: its own settle's, or those of the first tree alike in `key` (settled again, and compared, when proving the sharing). */
async function settledOnce(settles: Map<string, Settled>, key: string, settle: () => Promise<Settled>, prove: boolean): Promise<string[]> {
  const shared = settles.get(key);
  if (shared && !prove) return shared.problems;
  const now = await settle();
  if (!shared) settles.set(key, now);
  return shared ? [...now.problems, ...unlike(shared, now)] : now.problems;
}

function empty(dir: string): void {
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

/** A settled tree as a line a path: its type, and outside the root its bytes (those under the root are what a shared settle leaves out). */
function fingerprint(dir: string): string {
  const lines: string[] = [];
  const walk = (rel: string) => {
    const full = join(dir, rel);
    const st = lstatSync(full);
    const bytes = st.isFile() && !rel.startsWith('root/') ? createHash('sha1').update(readFileSync(full)).digest('hex') : '';
    lines.push(`${rel} ${st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'file'} ${bytes}`);
    if (st.isDirectory()) for (const name of readdirSync(full).sort()) walk(rel ? `${rel}/${name}` : name);
  };
  walk('');
  return lines.join('\n');
}

/** How a tree settled unlike the one whose settle it shares: a settle that read what the sharing leaves out. */
function unlike(shared: Settled, now: Settled): string[] {
  if (shared.fingerprint === now.fingerprint && shared.problems.join('\n') === now.problems.join('\n')) return [];
  return [`settles unlike a tree that differs from it only in the bytes of files under the root (${JSON.stringify(shared.problems)} then ${JSON.stringify(now.problems)})`];
}

/** The targets of the archive journals a cut left (each with its parents): the next apply of the archive resumes or undoes them. */
function unrecordedArchivePaths(stateDir: string): string[] {
  const out: string[] = [];
  let names: string[];
  try {
    names = readdirSync(join(stateDir, JOURNAL_DIR));
  } catch {
    return out;
  }
  for (const name of names) {
    try {
      const { target } = JSON.parse(readFileSync(join(stateDir, JOURNAL_DIR, name), 'utf8')) as { target: string };
      for (let p = target; p.length > 1; p = p.slice(0, p.lastIndexOf('/')) || '/') out.push(p);
    } catch {
      // a torn journal is the leaks check's to name
    }
  }
  return out;
}

/**
 * Two keys of a tree: `whole`, all of it (paths, types, bytes, link targets); `settling`, all but
 * the bytes of files under the root, which neither the settle nor the check reads: trees alike in it
 * settle alike.
 */
function treeKeys(tree: ReturnType<typeof treeAt>): { whole: string; settling: string } {
  const settling = createHash('sha1');
  const rootBytes = createHash('sha1');
  for (const [path, ino] of [...tree.paths].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const node = tree.nodes.get(ino)!;
    settling.update(`${path}\0${node.type}\0${node.type === 'symlink' ? node.target : ''}\0`);
    if (node.type === 'file') (path.startsWith('root/') ? rootBytes.update(`${path}\0`) : settling).update(node.bytes).update('\0');
  }
  const key = settling.digest('hex');
  return { settling: key, whole: `${key}${rootBytes.digest('hex')}` };
}

function describe(op: Recording['ops'][number]): string {
  switch (op.kind) {
    case 'write':
      return `write ${op.bytes.length} B at ${op.offset} of inode ${op.ino}`;
    case 'truncate':
      return `truncate inode ${op.ino} to ${op.size}`;
    case 'fsync':
      return `fsync inode ${op.ino}`;
    case 'rename':
    case 'link':
      return `${op.kind} ${op.from} -> ${op.path}`;
    default:
      return `${op.kind} ${op.path}`;
  }
}

/** A cut's tree settled as the next start settles it, and what is wrong with it then. */
async function settledProblems(dir: string, found: ReadonlySet<string>, reportsBefore: number): Promise<string[]> {
  const stateDir = join(dir, 'state');
  let reportSequence: number;
  try {
    // As the next start: the lock taken (a dead taker's leftovers removed), the store opened and settled.
    const lock = await acquireLock(stateDir, { command: 'power-cut check', timeoutMs: 1000 });
    try {
      reportSequence = (await openStore(stateDir, silentLogger())).state.reportSequence;
    } finally {
      lock.release();
    }
  } catch (err) {
    return [`the store does not open: ${(err as Error).message}`];
  }
  let problems: string[];
  try {
    // An archive's journal whose archive the store does not yet record is the next apply's to resume or
    // undo, as after a kill: the start alone leaves it, and says nothing is wrong.
    // Its target and the entries it names are that apply's too. Anything else is still a leak.
    const resumable = unrecordedArchivePaths(stateDir);
    problems = leaks({ root: join(dir, 'root'), stateDir }, found)
      .filter((p) => !p.endsWith(': the journal of no recorded archive'))
      .filter((p) => !(/: neither found there nor recorded by the store$/.test(p) && resumable.some((r) => p.startsWith(`root ${r}:`) || p.startsWith(`root ${r}/`))));
  } catch (err) {
    return [`the settled tree cannot be read: ${(err as Error).message}`];
  }
  // Nothing here is ever sent: every report made is waiting, each once, none before the work forgotten.
  const waiting = new Set(new Outbox(stateDir).pending());
  if (reportSequence < reportsBefore) problems.push(`the store counts ${reportSequence} reports; ${reportsBefore} were made before the work`);
  for (let s = 1; s <= reportSequence; s++) if (!waiting.has(s)) problems.push(`report ${s} is counted by the store but not in the outbox: lost`);
  return problems;
}
