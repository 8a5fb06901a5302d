import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { projectDir, runCli } from '../support/cli.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { scratch } from '../support/tree.js';
import { CurveSender, curvePublicKey } from '../../src/core/declaration/sealed.js';
import { newNkeySeed } from '../../src/core/declaration/nkey.js';

/** The script the build keeps TypeBox in (scripts/bundle.mjs, APART): a program requires it at TypeBox's first use. */
const TYPEBOX_SCRIPT = join(projectDir, 'dist/bin/apart/typebox.cjs');
/** The script of the NATS libraries (the link's clients and nkeys): a one-shot apply has no link, and opens sealed values natively. */
const NATS_SCRIPT = join(projectDir, 'dist/bin/apart/nats.cjs');

let cleanups: Array<() => void> = [];
afterEach(() => {
  cleanups.forEach((c) => c());
  cleanups = [];
});

/**
 * A --require hook that writes, as the process exits, every file Node's CommonJS loader has loaded
 * (require.cache: the program's bin/ scripts and each apart/ script it required), one a line.
 */
function loadWitness(dir: string) {
  const hook = join(dir, 'loaded-hook.cjs');
  const out = join(dir, 'loaded.txt');
  writeFileSync(hook, `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(out)}, Object.keys(require.cache).join('\\n')));\n`);
  return {
    hook,
    /** What the process loaded; it must have exited (the list is written at its exit). */
    loaded(): string[] {
      expect(existsSync(out), 'the process wrote no list of what it loaded (did it exit by a signal?)').toBe(true);
      const files = readFileSync(out, 'utf8').split('\n');
      // The hook saw the program: its own loader is in the list.
      expect(files).toContain(join(projectDir, 'bin/bundle.js'));
      return files;
    },
  };
}

function setup() {
  const s = scratch('mesh-schema-loading-');
  cleanups.push(s.cleanup);
  const root = join(s.dir, 'root');
  mkdirSync(join(root, 'etc'), { recursive: true });
  const config = join(s.dir, 'host.json');
  writeFileSync(config, JSON.stringify({ node: 'lazy', lockTimeoutMs: 1500 }));
  let sequence = 0;
  const declare = (resources: unknown[]) => {
    const path = join(s.dir, `decl-${++sequence}.json`);
    writeFileSync(path, JSON.stringify({ version: 1, node: 'lazy', mode: 'converged', sequence, resources }));
    return path;
  };
  const witness = loadWitness(s.dir);
  const apply = (decl: string) =>
    runCli('mesh-host', ['apply', decl, '--root', root, '--state-dir', join(s.dir, 'state'), '--config', config], { env: { NODE_OPTIONS: `--require ${witness.hook}` } });
  return { root, state: join(s.dir, 'state'), declare, apply, witness };
}

const VALID = [
  { type: 'directory', id: 'app-dir', path: '/etc/app', mode: '0755' },
  { type: 'file', id: 'app-conf', path: '/etc/app/app.conf', content: 'a = 1\n', mode: '0644' },
];

describe('a valid declaration is checked without TypeBox; an invalid one is explained with it', () => {
  it('an apply of a valid declaration, and its no-op apply again, load neither TypeBox nor a NATS library', async () => {
    expect(existsSync(TYPEBOX_SCRIPT), 'the build keeps TypeBox in a script apart').toBe(true);
    const s = setup();
    const decl = s.declare(VALID);
    const first = await s.apply(decl);
    expect(first.code, first.stderr).toBe(0);
    expect(readFileSync(join(s.root, 'etc/app/app.conf'), 'utf8')).toBe('a = 1\n');
    expect(s.witness.loaded()).not.toContain(TYPEBOX_SCRIPT);

    const again = await s.apply(s.declare(VALID));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^plan: 0 of 2 steps to take$/m);
    expect(s.witness.loaded()).not.toContain(TYPEBOX_SCRIPT);
    expect(s.witness.loaded(), 'a one-shot apply loads no NATS library').not.toContain(NATS_SCRIPT);
  });

  it('a one-shot apply of a sensitive file and of one sealed to this host opens and digests it without loading a NATS library', async () => {
    expect(existsSync(NATS_SCRIPT), 'the build keeps the NATS libraries in a script apart').toBe(true);
    const s = setup();
    // A sensitive file: the host's curve key is made for its keyed digest.
    const plain = await s.apply(s.declare([VALID[0], { ...VALID[1], sensitive: true }]));
    expect(plain.code, plain.stderr).toBe(0);
    expect(s.witness.loaded()).not.toContain(NATS_SCRIPT);
    const mine = curvePublicKey(readFileSync(join(s.state, 'seal.xk'), 'utf8'))!;
    // The same file's content sealed to that key, as meshctl seals it: opened and written.
    const sealed = new CurveSender(newNkeySeed('operator')).seal(Buffer.from('secret = 42\n'), mine);
    const opened = await s.apply(s.declare([VALID[0], { ...VALID[1], sensitive: true, content: sealed }]));
    expect(opened.code, opened.stderr).toBe(0);
    expect(readFileSync(join(s.root, 'etc/app/app.conf'), 'utf8')).toBe('secret = 42\n');
    expect(opened.stdout).not.toContain('secret = 42');
    expect(s.witness.loaded()).not.toContain(NATS_SCRIPT);
  });

  it('an invalid declaration still gets its explanation by JSON path, TypeBox loaded for it, and nothing is touched', async () => {
    const s = setup();
    const bad = s.declare([VALID[0], { ...VALID[1], mode: 644, colour: 'blue' }]);
    const refused = await s.apply(bad);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('declaration refused');
    expect(refused.stderr).toContain('/resources/1/mode: must be string, not the number 644');
    expect(refused.stderr).toContain('/resources/1/colour: unknown field');
    expect(existsSync(join(s.root, 'etc/app'))).toBe(false);
    expect(s.witness.loaded()).toContain(TYPEBOX_SCRIPT);
  });
});

const unavailable = natsUnavailable();

describe.skipIf(unavailable !== undefined && !process.env.CI)(`the daemon's start and its applies never load TypeBox${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('a daemon started, given a valid declaration and stopped has loaded no TypeBox', async () => {
    const s = scratch('mesh-schema-daemon-');
    cleanups.push(s.cleanup);
    const witness = loadWitness(s.dir);
    const host = await mesh.enrol({ nodeFlags: ['--require', witness.hook], resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] });
    await host.put({ epoch: 1, sequence: 2, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, { type: 'file', id: 'conf', path: '/srv/app/app.conf', content: 'b = 2\n' }] });
    const report = await host.waitForReport('the apply of sequence 2', (r) => r.declaration?.sequence === 2);
    expect(report.outcome, JSON.stringify(report.error)).toBe('converged');
    expect(readFileSync(join(host.root, 'srv/app/app.conf'), 'utf8')).toBe('b = 2\n');
    expect(await host.stop()).toBe(0);
    expect(witness.loaded()).not.toContain(TYPEBOX_SCRIPT);
  });
});
