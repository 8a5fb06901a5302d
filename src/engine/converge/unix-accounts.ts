import { readFileSync } from 'node:fs';

/** Resolves user and group names to ids as this machine knows them. */
export interface Accounts {
  uid(name: string): number | undefined;
  gid(name: string): number | undefined;
  userName(uid: number): string;
  groupName(gid: number): string;
  /**
   * Tells the accounts of one an apply makes or finds (a user or group resource): a file declared
   * with that owner in the same declaration resolves to it, in the plan as in the apply.
   */
  learn(kind: 'user' | 'group', name: string, id: number): void;
  /** Reads the machine's tables again at their next use: an apply starts from what is there now. */
  refresh(): void;
  /** Counts every learn and refresh: an answer worked out from the accounts stands while it is the same. */
  readonly generation: number;
}

function table(file: string): Map<string, number> {
  const map = new Map<string, number>();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return map;
  }
  for (const line of text.split('\n')) {
    const [name, , id] = line.split(':');
    if (name && id !== undefined && /^\d+$/.test(id)) map.set(name, Number(id));
  }
  return map;
}

/** The machine's own /etc/passwd and /etc/group (not the --root tree's: owners are the machine's), and what an apply taught them. */
export function systemAccounts(etc = '/etc'): Accounts {
  let users: Map<string, number> | undefined;
  let groups: Map<string, number> | undefined;
  const learnt = { user: new Map<string, number>(), group: new Map<string, number>() };
  let generation = 0;
  const resolve = (map: () => Map<string, number>, kind: 'user' | 'group') => (name: string) => (/^\d+$/.test(name) ? Number(name) : (learnt[kind].get(name) ?? map().get(name)));
  const reverse = (map: () => Map<string, number>, kind: 'user' | 'group') => (id: number) => {
    for (const [name, value] of learnt[kind]) if (value === id) return name;
    for (const [name, value] of map()) if (value === id) return name;
    return String(id);
  };
  const u = () => (users ??= table(`${etc}/passwd`));
  const g = () => (groups ??= table(`${etc}/group`));
  return {
    uid: resolve(u, 'user'),
    gid: resolve(g, 'group'),
    userName: reverse(u, 'user'),
    groupName: reverse(g, 'group'),
    learn(kind, name, id) {
      learnt[kind].set(name, id);
      generation++;
    },
    refresh() {
      users = groups = undefined;
      learnt.user.clear();
      learnt.group.clear();
      generation++;
    },
    get generation() {
      return generation;
    },
  };
}
