import { readFileSync } from 'node:fs';

/** Resolves user and group names to ids as this machine knows them. */
export interface Accounts {
  uid(name: string): number | undefined;
  gid(name: string): number | undefined;
  userName(uid: number): string;
  groupName(gid: number): string;
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

/** The machine's own /etc/passwd and /etc/group (not the --root tree's: owners are the machine's). */
export function systemAccounts(etc = '/etc'): Accounts {
  let users: Map<string, number> | undefined;
  let groups: Map<string, number> | undefined;
  const resolve = (map: () => Map<string, number>) => (name: string) => (/^\d+$/.test(name) ? Number(name) : map().get(name));
  const reverse = (map: () => Map<string, number>) => (id: number) => {
    for (const [name, value] of map()) if (value === id) return name;
    return String(id);
  };
  const u = () => (users ??= table(`${etc}/passwd`));
  const g = () => (groups ??= table(`${etc}/group`));
  return { uid: resolve(u), gid: resolve(g), userName: reverse(u), groupName: reverse(g) };
}
