import type { CommandRunner } from '../../core/system/runner.js';
import { readAccountTables, type AccountTables } from './account-tables.js';

/**
 * The machine's own account tools (useradd, usermod, userdel, groupadd, groupmod, groupdel): they take
 * the lock the shadow suite takes on /etc/passwd and /etc/group, keep /etc/shadow and /etc/gshadow in
 * step, and run the machine's hooks, which an edit of the files would not. Under a root other than `/`
 * they edit that tree's files (--prefix: no chroot, so the tree needs no binaries of its own).
 */
export interface AccountTools {
  run(tool: string, args: string[]): Promise<void>;
  /** The tables as they are now: the check's one read, and the second look's. */
  read(): Promise<AccountTables>;
}

export class AccountToolFailed extends Error {}

/** Runs a tool's step: what it said when it failed (the step's problem), or nothing. */
export async function act(run: () => Promise<void>): Promise<string | undefined> {
  try {
    await run();
    return undefined;
  } catch (err) {
    if (err instanceof AccountToolFailed) return err.message;
    throw err;
  }
}

export function accountTools(runner: CommandRunner, root: string): AccountTools {
  const prefix = root === '/' ? [] : ['--prefix', root];
  return {
    async run(tool, args) {
      const result = await runner.run(tool, [...prefix, ...args], { timeoutMs: 30_000 });
      if (result.code !== 0) {
        const said = `${result.stderr}${result.stdout}`.trim().split('\n').filter(Boolean).slice(-2).join('; ');
        throw new AccountToolFailed(`${tool} ${args.filter((a) => !a.startsWith('$')).join(' ')} failed (exit ${result.code})${said ? `: ${said}` : ''}`);
      }
    },
    read: async () => (root === '/' ? readThroughGetent(runner) : readAccountTables(root)),
  };
}

/**
 * On the machine itself, the tables as NSS answers them (getent), so that the second look sees what
 * every program on the machine sees, not only the files the tools wrote.
 */
async function readThroughGetent(runner: CommandRunner): Promise<AccountTables> {
  const [passwd, group, shadow] = await Promise.all(['passwd', 'group', 'shadow'].map((db) => runner.run('getent', [db], { timeoutMs: 30_000 })));
  if (passwd!.code !== 0 || group!.code !== 0) throw new AccountToolFailed(`getent could not read the accounts: ${(passwd!.code !== 0 ? passwd! : group!).stderr.trim() || 'no answer'}`);
  const parse = (text: string) => text.split('\n').filter(Boolean).map((l) => l.split(':'));
  const users = new Map(parse(passwd!.stdout).map(([name, , uid, gid, comment, home, shell]) => [name!, { name: name!, uid: Number(uid), gid: Number(gid), comment: comment ?? '', home: home ?? '', shell: shell ?? '' }]));
  const groups = new Map(parse(group!.stdout).map(([name, , gid, members]) => [name!, { name: name!, gid: Number(gid), members: members ? members.split(',').filter(Boolean) : [] }]));
  const hashes = new Map(shadow!.code === 0 ? parse(shadow!.stdout).map(([name, hash]) => [name!, hash ?? '']) : []);
  return { users, groups, hashes };
}
