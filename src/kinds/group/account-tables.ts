import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One line of /etc/passwd. */
export interface PasswdEntry {
  name: string;
  uid: number;
  gid: number;
  comment: string;
  home: string;
  shell: string;
}

/** One line of /etc/group. */
export interface GroupEntry {
  name: string;
  gid: number;
  members: string[];
}

/**
 * The account tables under a root, as the machine's own tools keep them (useradd, groupadd and their
 * --prefix write these files; NSS's `files` source reads them). Read once for an apply's check.
 */
export interface AccountTables {
  users: Map<string, PasswdEntry>;
  groups: Map<string, GroupEntry>;
  /** The password hash of each user, from /etc/shadow: compared, never shown. */
  hashes: Map<string, string>;
}

function lines(root: string, file: string): string[][] {
  let text: string;
  try {
    text = readFileSync(join(root, 'etc', file), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).map((l) => l.split(':'));
}

export function readAccountTables(root: string): AccountTables {
  const users = new Map<string, PasswdEntry>();
  for (const [name, , uid, gid, comment, home, shell] of lines(root, 'passwd')) {
    if (name) users.set(name, { name, uid: Number(uid), gid: Number(gid), comment: comment ?? '', home: home ?? '', shell: shell ?? '' });
  }
  const groups = new Map<string, GroupEntry>();
  for (const [name, , gid, members] of lines(root, 'group')) {
    if (name) groups.set(name, { name, gid: Number(gid), members: members ? members.split(',').filter(Boolean) : [] });
  }
  const hashes = new Map<string, string>();
  for (const [name, hash] of lines(root, 'shadow')) if (name) hashes.set(name, hash ?? '');
  return { users, groups, hashes };
}

/** The ranges useradd and groupadd pick ids from, as /etc/login.defs under the root says (Debian's defaults otherwise). */
export function idRange(root: string, what: 'UID' | 'GID', system: boolean): { min: number; max: number } {
  const defs = new Map<string, number>();
  for (const [line] of lines(root, 'login.defs')) {
    const m = /^\s*([A-Z_]+)\s+(\d+)/.exec(line ?? '');
    if (m) defs.set(m[1]!, Number(m[2]));
  }
  return system ? { min: defs.get(`SYS_${what}_MIN`) ?? 100, max: defs.get(`SYS_${what}_MAX`) ?? 999 } : { min: defs.get(`${what}_MIN`) ?? 1000, max: defs.get(`${what}_MAX`) ?? 60000 };
}

/**
 * The id a new account gets, picked as useradd and groupadd pick it, so that the plan can say it and a
 * file declared with that owner resolves to it: for a system account the highest free id of the
 * system range, else the lowest free id above every one used in the range. `taken`: ids already
 * promised in this apply.
 */
export function nextFreeId(used: Iterable<number>, range: { min: number; max: number }, system: boolean, taken: ReadonlySet<number>): number | undefined {
  const busy = new Set([...used, ...taken]);
  if (system) {
    for (let id = range.max; id >= range.min; id--) if (!busy.has(id)) return id;
    return undefined;
  }
  let high = range.min - 1;
  for (const id of busy) if (id >= range.min && id <= range.max && id > high) high = id;
  if (high < range.max) return high + 1;
  for (let id = range.min; id <= range.max; id++) if (!busy.has(id)) return id;
  return undefined;
}
