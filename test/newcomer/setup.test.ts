import { describe, expect, it } from 'vitest';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from '../support/cli.js';
import { freshMachine, freshMachineUnavailable, IMAGE_POLICY_RC_D, type FreshMachine } from '../support/fresh-debian.js';
import { cloneUnderTest, fileState, POLICY_RC_D } from '../support/newcomer.js';

/**
 * scripts/setup.sh on a fresh Debian 12 machine, around its one real apt-get install: whatever
 * /usr/sbin/policy-rc.d the machine had (one that refuses starts, one that does not, none) is exactly
 * as it was when the script ends, whether the install succeeds or fails, and no service could start
 * while it ran. To keep each case to one small install, every command the script looks for is put
 * on PATH as a stub, and apt really installs from Debian's mirror the one package the script looks for by
 * name instead (busybox-static); npm is a stub: building the project is not what these cases are about.
 */

/** The commands setup.sh looks for before it installs the packages that bring them (its `for pair in` lists). */
function commandsSetupLooksFor(): string[] {
  const script = readFileSync(join(projectDir, 'scripts/setup.sh'), 'utf8');
  const lists = [...script.matchAll(/for pair in ([^;]+); do/g)].map((m) => m[1]!);
  if (lists.length === 0) throw new Error('scripts/setup.sh names no commands to look for (no `for pair in …; do`)');
  return lists.flatMap((list) => list.trim().split(/\s+/)).map((pair) => pair.split(':')[0]!);
}

/** Stubs of every command, and a hook that notes what policy-rc.d says while dpkg runs (and fails the install when asked). */
function prepare(root: string, installFails: boolean): void {
  const stubs = join(root, 'opt/mesh-host-test/present');
  mkdirSync(stubs, { recursive: true });
  for (const command of [...commandsSetupLooksFor().filter((c) => c !== '/usr/bin/time'), 'npm']) {
    if (command.startsWith('/')) throw new Error(`setup.sh looks for ${command} by its path: add it to this test's stubs`);
    writeFileSync(join(stubs, command), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  }
  writeFileSync(
    join(root, 'opt/mesh-host-test/during-install'),
    [
      '#!/bin/sh',
      'p=/usr/sbin/policy-rc.d',
      'if [ -x $p ]; then $p mesh-host-test start; echo "exit $?" > /root/policy-during-install; else echo none > /root/policy-during-install; fi',
      'cat $p > /root/policy-text-during-install 2>/dev/null',
      installFails ? 'echo "the test fails this install" >&2; exit 1' : 'exit 0',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  writeFileSync(join(root, 'etc/apt/apt.conf.d/99-mesh-host-test'), 'DPkg::Pre-Invoke { "/opt/mesh-host-test/during-install"; };\n');
}

interface Policy {
  name: string;
  /** Puts it in place on the machine (nothing for none). */
  place(root: string): void;
}

const policies: Policy[] = [
  {
    name: "this image's, which refuses starts",
    place: (root) => {
      writeFileSync(join(root, POLICY_RC_D), IMAGE_POLICY_RC_D);
      chmodSync(join(root, POLICY_RC_D), 0o755);
    },
  },
  {
    name: 'one that allows starts (its own mode and group)',
    place: (root) => {
      writeFileSync(join(root, POLICY_RC_D), '#!/bin/sh\n# a site policy: services may start\nexit 0\n');
      chmodSync(join(root, POLICY_RC_D), 0o750);
      chownSync(join(root, POLICY_RC_D), 0, 4);
    },
  },
  { name: 'none', place: (root) => rmSync(join(root, POLICY_RC_D), { force: true }) },
];

/** A fresh machine with a fresh clone of the commit under test, for the time of `check`. */
async function onFreshMachine(check: (machine: FreshMachine, checkout: string) => Promise<void>): Promise<void> {
  const machine = freshMachine();
  try {
    await check(machine, await cloneUnderTest(machine));
  } finally {
    machine.dispose();
  }
}

const unavailable = freshMachineUnavailable();
// Concurrent: each case is mostly waiting on Debian's mirror, and has a machine of its own.
describe.skipIf(unavailable !== undefined && !process.env.CI)(`setup.sh and policy-rc.d on a fresh machine${unavailable ? ` (cannot run: ${unavailable})` : ''}`, { concurrent: true }, () => {
  for (const policy of policies) {
    for (const installFails of [false, true]) {
      it(`policy-rc.d ${policy.name}, the install ${installFails ? 'failing' : 'succeeding'}: exactly as it was after setup.sh, and starts were refused during the install`, () =>
        onFreshMachine(async (machine, checkout) => {
          policy.place(machine.root);
          prepare(machine.root, installFails);
          const before = fileState(machine.root, POLICY_RC_D);

          const run = await machine.run(`cd ${checkout} && PATH=/opt/mesh-host-test/present:$PATH bash scripts/setup.sh`, { timeoutMs: 300_000 });
          const said = `${run.failure?.message ?? ''}\n${run.stdout}\n${run.stderr}`;
          if (installFails) expect(run.code, said).not.toBe(0);
          else expect(run.code, said).toBe(0);
          // The install really ran: apt got as far as dpkg, and (when it succeeded) put time in place.
          expect(readFileSync(join(machine.root, 'root/policy-during-install'), 'utf8'), said).toBe('exit 101\n');
          expect(existsSync(join(machine.root, 'usr/bin/busybox'))).toBe(!installFails);
          // One that refused already was used as it was: nothing replaced it during the install.
          if (before?.text === IMAGE_POLICY_RC_D) expect(readFileSync(join(machine.root, 'root/policy-text-during-install'), 'utf8')).toBe(IMAGE_POLICY_RC_D);

          expect(fileState(machine.root, POLICY_RC_D)).toEqual(before);
          expect(readdirSync(join(machine.root, 'usr/sbin')).filter((name) => name.includes('policy-rc.d') && name !== 'policy-rc.d')).toEqual([]);
        }),
      360_000);
    }
  }
});

/** The Node.js version package.json's engines ask for (`>=20.19` → 20.19). */
function nodeNeeded(): string {
  const engines = (JSON.parse(readFileSync(join(projectDir, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
  const needed = /^>=(\d+(\.\d+)*)$/.exec(engines)?.[1];
  if (!needed) throw new Error(`package.json's engines.node is not of the form >=VERSION: ${engines}`);
  return needed;
}

const nodes = [
  { name: 'no node on PATH', place: (root: string) => rmSync(join(root, 'usr/bin/node')), found: 'no node on PATH' },
  // Debian 12's own nodejs package.
  { name: 'a node older than engines', place: (root: string) => writeFileSync(join(root, 'usr/bin/node'), '#!/bin/sh\necho 18.19.0\n', { mode: 0o755 }), found: '18.19.0' },
];

describe.skipIf(unavailable !== undefined && !process.env.CI)(`setup.sh without the Node.js it needs, on a fresh machine${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  for (const { name, place, found } of nodes) {
    it(`${name}: one line naming the version needed and what was found, exit 2, nothing installed`, () =>
      onFreshMachine(async (machine, checkout) => {
        place(machine.root);
        const before = fileState(machine.root, POLICY_RC_D);

        const run = await machine.run(`cd ${checkout} && bash scripts/setup.sh`);
        expect(run.code, `${run.failure?.message ?? ''}\n${run.stdout}\n${run.stderr}`).toBe(2);
        const lines = `${run.stdout}${run.stderr}`.split('\n').filter((line) => line !== '');
        expect(lines).toHaveLength(1);
        expect(lines[0]).toContain(`Node.js ${nodeNeeded()} or newer`);
        expect(lines[0]).toContain(found);
        expect(existsSync(join(machine.root, 'usr/bin/nats-server'))).toBe(false);
        expect(existsSync(join(machine.root, checkout, 'node_modules'))).toBe(false);
        expect(fileState(machine.root, POLICY_RC_D)).toEqual(before);
      }),
    120_000);
  }
});
