import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { JOURNAL_DIR, journalPath, readJournal } from '../../src/kinds/archive/journal.js';
import { CARRIED_BUNDLE, CARRIED_CREDS, KEPT_DECLARATION, KEPT_REVISION } from '../../src/host/env/host-paths.js';
import { FAILED_TRIAL_FILE, RELEASES_DIR } from '../../src/host/release/layout.js';
import { HOST_KEY_FILE } from '../../src/engine/report/host-key.js';
import { SEALING_KEY_FILE } from '../../src/engine/report/sealing-key.js';
import { FULL_REPORTS_DIR, OUTBOX_DIR } from '../../src/engine/report/outbox.js';
import { INTENTS_FILE } from '../../src/core/store/intents.js';
import { LOCK_FILE } from '../../src/core/store/store-lock.js';
import { journalName } from '../../src/core/store/records.js';
import { peekState, STATE_FILE } from '../../src/core/store/store.js';
import type { StoreState } from '../../src/core/store/state.js';

/**
 * What a crash left that the store does not account for, once the host has settled (the next start,
 * or the next apply): the whole root and the whole state directory against what the store records.
 * On the root, every path is one the host found there (`found`), a record's target, or an entry an
 * archive's journal names; every such path is there. In the state directory, every name is one of the
 * store's own, and: the intents are empty, the records' journal is the generation the head names and
 * no longer than it says, outbox and whole reports are numbered no later than the store's sequence,
 * every archive journal is complete and of a recorded archive, every kept original is named by a
 * record or a journal. Anything else (a temporary file of any name among them) is a leak. Empty when
 * nothing leaked.
 */
export function leaks(paths: { root?: string; stateDir: string }, found: ReadonlySet<string> = new Set(['/'])): string[] {
  const state = peekState(paths.stateDir);
  const out = stateLeaks(paths.stateDir, state);
  if (paths.root !== undefined) out.push(...rootLeaks(paths.root, paths.stateDir, state, found));
  return out;
}

/** Every path under a root, from `/`: what the host found there, given to `leaks` as `found`. */
export function pathsUnder(root: string): Set<string> {
  const out = new Set<string>();
  const walk = (rel: string) => {
    out.add(rel || '/');
    if (lstatSync(join(root, rel)).isDirectory()) for (const name of readdirSync(join(root, rel))) walk(`${rel}/${name}`);
  };
  walk('');
  return out;
}

const isPath = (target: string) => target.startsWith('/');

function rootLeaks(root: string, stateDir: string, state: StoreState | undefined, found: ReadonlySet<string>): string[] {
  const ours = new Set<string>();
  for (const r of Object.values(state?.records ?? {})) {
    if (!isPath(r.target)) continue;
    ours.add(r.target);
    if (r.type === 'archive') for (const e of readJournal(stateDir, r.target)?.entries ?? []) ours.add(`${r.target}/${e.name}`);
  }
  const there = pathsUnder(root);
  return [
    ...[...there].filter((p) => !found.has(p) && !ours.has(p)).map((p) => `root ${p}: neither found there nor recorded by the store`),
    ...[...ours].filter((p) => !there.has(p)).map((p) => `root ${p}: recorded by the store, missing`),
  ];
}

const REPORT = /^(\d{12})\.json$/;
/** The releases' folder: an installed host's state directory (the default one) holds it, the launcher's own. */
const RELEASES_IN_STATE = basename(RELEASES_DIR);
/** Names the host keeps in its state directory beside the store (a daemon's, genesis's, a release's). */
const KEPT = new Set([LOCK_FILE, KEPT_DECLARATION, KEPT_REVISION, CARRIED_BUNDLE, CARRIED_CREDS, HOST_KEY_FILE, SEALING_KEY_FILE, FAILED_TRIAL_FILE, RELEASES_IN_STATE]);

function stateLeaks(stateDir: string, state: StoreState | undefined): string[] {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return [];
  }
  const head = names.includes(STATE_FILE) ? (JSON.parse(readFileSync(join(stateDir, STATE_FILE), 'utf8')) as { journal?: { generation: number; length: number } }) : undefined;
  const sequence = state?.reportSequence ?? 0;
  const out: string[] = [];
  for (const name of names) {
    const path = join(stateDir, name);
    if (name === STATE_FILE || KEPT.has(name)) continue;
    if (name === INTENTS_FILE) {
      if (lstatSync(path).size > 0) out.push(`state ${name}: not empty (${lstatSync(path).size} bytes of intents)`);
    } else if (head?.journal && name === journalName(head.journal.generation)) {
      if (lstatSync(path).size !== head.journal.length) out.push(`state ${name}: ${lstatSync(path).size} bytes, the head commits ${head.journal.length}`);
    } else if (name === OUTBOX_DIR || name === FULL_REPORTS_DIR) {
      for (const report of readdirSync(path)) {
        const m = REPORT.exec(report);
        if (!m) out.push(`state ${name}/${report}: not a report`);
        else if (Number(m[1]) > sequence) out.push(`state ${name}/${report}: beyond the store's report sequence ${sequence}`);
      }
    } else if (name === JOURNAL_DIR) out.push(...archiveJournalLeaks(stateDir, state));
    else if (name === 'taken') out.push(...takenLeaks(stateDir, state));
    else if (name === 'archives') out.push(...readdirSync(path).filter((n) => !/^[0-9a-f]{64}$/.test(n)).map((n) => `state archives/${n}: not a cached archive`));
    else out.push(`state ${name}: not one of the store's names`);
  }
  return out;
}

function archiveJournalLeaks(stateDir: string, state: StoreState | undefined): string[] {
  const archives = Object.values(state?.records ?? {}).filter((r) => r.type === 'archive');
  const named = new Map(archives.map((r) => [journalPath(stateDir, r.target), r.target]));
  return readdirSync(join(stateDir, JOURNAL_DIR)).flatMap((name) => {
    const target = named.get(join(stateDir, JOURNAL_DIR, name));
    if (target === undefined) return [`state ${JOURNAL_DIR}/${name}: the journal of no recorded archive`];
    return readJournal(stateDir, target)?.complete ? [] : [`state ${JOURNAL_DIR}/${name}: the journal of ${target} is not complete`];
  });
}

function takenLeaks(stateDir: string, state: StoreState | undefined): string[] {
  const copies = new Set<string>();
  for (const r of Object.values(state?.records ?? {})) {
    if (r.original?.copy) copies.add(r.original.copy);
    if (r.type === 'archive') for (const e of readJournal(stateDir, r.target)?.entries ?? []) if (e.original?.copy) copies.add(e.original.copy);
  }
  return readdirSync(join(stateDir, 'taken')).filter((n) => !copies.has(n)).map((n) => `state taken/${n}: the copy of no recorded original`);
}
