import { afterEach, describe, expect, it } from 'vitest';
import { chmodSync, existsSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { validateDeclaration } from '../../src/core/declaration/validate.js';
import { systemRunner } from '../../src/core/system/runner.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';

let host: TestHost;
afterEach(() => host?.cleanup());

const HASH = '$6$mesh$V8cOkqSV2xZ6lL1Qh4yJ6cV3Q2m5q8b0aX7uT1o9pE4wR2sD5fG8hJ1kL3zX6cV9bN2mQ4wE7rT0yU3iO6pA9s.';

/** A scratch root with the account tables a fresh Debian has, as the machine's tools (useradd --prefix) edit them. */
function accountsRoot(): TestHost {
  const h = testHost({ kinds: { runner: systemRunner() } });
  const etc = join(h.root, 'etc');
  writeFileSync(join(etc, 'passwd'), 'root:x:0:0:root:/root:/bin/bash\nkeep:x:1200:1200:found here:/home/keep:/bin/sh\n');
  writeFileSync(join(etc, 'group'), 'root:x:0:\nkeep:x:1200:\n');
  writeFileSync(join(etc, 'shadow'), 'root:*:19000:0:99999:7:::\nkeep:!:19000:0:99999:7:::\n');
  writeFileSync(join(etc, 'gshadow'), 'root:*::\nkeep:!::\n');
  chmodSync(join(etc, 'shadow'), 0o640);
  chmodSync(join(etc, 'gshadow'), 0o640);
  return h;
}

const lineOf = (file: string, name: string) => readFileSync(join(host.root, 'etc', file), 'utf8').split('\n').find((l) => l.startsWith(`${name}:`));
const group = (extra: object = {}): Resource => ({ type: 'group', id: 'web-group', name: 'web', ...extra }) as Resource;
const alice = (extra: object = {}): Resource => ({ type: 'user', id: 'alice', name: 'alice', group: 'web', groups: ['keep'], comment: 'Alice', home: '/home/alice', shell: '/bin/sh', password: { hashed: HASH }, ...extra }) as Resource;
const ownedFile: Resource = { type: 'file', id: 'motd', path: '/etc/alice.motd', content: 'hello\n', owner: 'alice', group: 'web', mode: '0640' };

describe('users and groups on a scratch root, through the machine’s own tools', () => {
  it('makes a group and a user, and a file owned by that user declared before them: the plan orders the accounts first', async () => {
    host = accountsRoot();
    const d = declaration([ownedFile, alice(), group()]);
    const first = reportOf(await host.apply(d));
    expect(first.outcome, JSON.stringify(first)).toBe('converged');
    expect(first.steps.map((s) => `${s.resource}:${s.status}`)).toEqual(['web-group:done', 'alice:done', 'motd:done']);
    expect(lineOf('group', 'web')).toMatch(/^web:x:(\d+):/);
    const gid = Number(lineOf('group', 'web')!.split(':')[2]);
    const [, , uid, userGid, comment, home, shell] = lineOf('passwd', 'alice')!.split(':');
    expect([Number(userGid), comment, home, shell]).toEqual([gid, 'Alice', '/home/alice', '/bin/sh']);
    expect(lineOf('shadow', 'alice')!.split(':')[1]).toBe(HASH);
    expect(lineOf('group', 'keep')).toBe('keep:x:1200:alice');
    const st = lstatSync(join(host.root, 'etc/alice.motd'));
    expect([st.uid, st.gid]).toEqual([Number(uid), gid]);
    // The password is never in the report, whole or in part.
    expect(JSON.stringify(first)).not.toContain(HASH.slice(3, 20));
    expect(first.steps.find((s) => s.resource === 'alice')!.actions).toContain('password (hashed, not shown)');

    const again = reportOf(await host.apply(d));
    expect(again.outcome).toBe('converged');
    expect(again.steps.filter((s) => s.status !== 'unchanged')).toEqual([]);
  });

  it('puts back what was changed by hand, and a second look reads it', async () => {
    host = accountsRoot();
    const d = declaration([group(), alice()]);
    expect(reportOf(await host.apply(d)).outcome).toBe('converged');
    execFileSync('usermod', ['--prefix', host.root, '--shell', '/bin/bash', '--password', '!', 'alice']);
    const mended = reportOf(await host.apply(d));
    expect(mended.outcome).toBe('converged');
    expect(mended.steps.find((s) => s.resource === 'alice')!.actions).toEqual(['shell /bin/bash→/bin/sh', 'password (hashed, not shown)']);
    expect(lineOf('passwd', 'alice')!.endsWith(':/bin/sh')).toBe(true);
    expect(mended.said).toContain('1 user read back at the second look');
  });

  it('holds a user found on an adopted machine; takes it when told, and gives its entry back when it is no longer declared', async () => {
    host = accountsRoot();
    const keep = { type: 'user', id: 'keep', name: 'keep', shell: '/bin/bash' } as Resource;
    const held = reportOf(await host.apply(declaration([keep], { mode: 'adopted' })));
    expect(held.steps.map((s) => s.status)).toEqual(['held']);
    expect(lineOf('passwd', 'keep')!.endsWith(':/bin/sh')).toBe(true);
    const taken = reportOf(await host.apply(declaration([{ ...keep, take: true } as Resource], { mode: 'adopted', sequence: 2 })));
    expect(taken.steps.map((s) => `${s.status}:${s.actions.join(',')}`)).toEqual(['done:take,shell /bin/sh→/bin/bash']);
    expect(lineOf('passwd', 'keep')!.endsWith(':/bin/bash')).toBe(true);
    const given = reportOf(await host.apply(declaration([], { mode: 'adopted', sequence: 3 })));
    expect(given.steps.map((s) => `${s.status}:${s.actions.join(',')}`)).toEqual(['done:remove,original given back']);
    expect(lineOf('passwd', 'keep')).toBe('keep:x:1200:1200:found here:/home/keep:/bin/sh');
  });

  it('deletes the user and the group it made when they are no longer declared, the user first, and keeps the home', async () => {
    host = accountsRoot();
    expect(reportOf(await host.apply(declaration([group(), alice()]))).outcome).toBe('converged');
    expect(existsSync(join(host.root, 'home/alice'))).toBe(true);
    const removed = reportOf(await host.apply(declaration([], { sequence: 2 })));
    expect(removed.outcome, JSON.stringify(removed)).toBe('converged');
    expect(removed.steps.map((s) => s.resource)).toEqual(['alice', 'web-group']);
    expect(lineOf('passwd', 'alice')).toBeUndefined();
    expect(lineOf('group', 'web')).toBeUndefined();
    expect(existsSync(join(host.root, 'home/alice'))).toBe(true);
  });

  it('refuses a uid another user holds, naming it, and touches nothing', async () => {
    host = accountsRoot();
    const before = readFileSync(join(host.root, 'etc/passwd'), 'utf8');
    const result = await host.apply(declaration([alice({ uid: 1200, group: 'keep' })]));
    expect(result.kind).toBe('refused');
    expect(JSON.stringify(result)).toContain("uid 1200 is user keep's on this machine");
    expect(readFileSync(join(host.root, 'etc/passwd'), 'utf8')).toBe(before);
  });
});

describe('the declaration of users and groups', () => {
  it('refuses a password that is not hashed, a user named twice and a relative home, each at its JSON path', async () => {
    const checked = await validateDeclaration(declaration([alice({ password: { hashed: 'secret' } }), alice({ id: 'alice-2', home: 'home/a' })]));
    expect(checked.ok).toBe(false);
    const paths = checked.ok ? [] : checked.problems.map((p) => p.path);
    expect(paths).toContain('/resources/0/password/hashed');
    expect(paths).toContain('/resources/1/home');
    const twice = await validateDeclaration(declaration([alice(), alice({ id: 'alice-2' })]));
    expect(twice.ok ? [] : twice.problems.map((p) => p.message)).toEqual(["user name 'alice' is declared twice (first at /resources/0)"]);
  });
});
