import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { hashTree, scratch } from '../support/tree.js';

/**
 * The plan predicts the failures it can see: a file or directory whose directory is neither on the
 * machine nor declared cannot be made, so the dry run says so (exit 3) and the apply refuses before
 * touching anything, instead of a plan of "2 of 2 steps" and an apply that fails half way.
 */
describe('a path whose directory nothing makes', () => {
  const declaration = (resources: object[]) => JSON.stringify({ version: 1, node: hostname(), mode: 'converged', sequence: 1, resources });

  it('the dry run names it and exits 3; the apply refuses it whole and touches nothing', async () => {
    const work = scratch();
    try {
      mkdirSync(join(work.dir, 'root/srv'), { recursive: true });
      const file = join(work.dir, 'd.json');
      writeFileSync(file, declaration([{ type: 'file', id: 'ok', path: '/srv/ok.conf', content: 'x' }, { type: 'file', id: 'lost', path: '/srv/nope/f.conf', content: 'y' }, { type: 'directory', id: 'deep', path: '/srv/none/deeper' }]));
      const flags = ['--root', join(work.dir, 'root'), '--state-dir', join(work.dir, 'state'), '--config', join(work.dir, 'host.json'), '--log-level', 'warn'];
      const before = hashTree(join(work.dir, 'root'));
      const dry = await runCli('mesh-host', ['apply', file, '--dry-run', ...flags]);
      expect(dry.code, dry.stdout + dry.stderr).toBe(3);
      expect(dry.stderr).toContain('lost (/srv/nope/f.conf): its directory /srv/nope does not exist and nothing in the declaration makes it');
      expect(dry.stderr).toContain('deep (/srv/none/deeper): its directory /srv/none does not exist');
      const applied = await runCli('mesh-host', ['apply', file, ...flags]);
      expect(applied.code).toBe(3);
      expect(hashTree(join(work.dir, 'root'))).toEqual(before);
      expect(existsSync(join(work.dir, 'root/srv/ok.conf'))).toBe(false);
    } finally {
      work.cleanup();
    }
  });

  it('a directory declared before the file, or one on the machine, is enough', async () => {
    const work = scratch();
    try {
      mkdirSync(join(work.dir, 'root/srv/there'), { recursive: true });
      const file = join(work.dir, 'd.json');
      writeFileSync(file, declaration([{ type: 'directory', id: 'made', path: '/srv/made' }, { type: 'file', id: 'in-made', path: '/srv/made/f.conf', content: 'y' }, { type: 'file', id: 'in-there', path: '/srv/there/g.conf', content: 'z' }]));
      const run = await runCli('mesh-host', ['apply', file, '--root', join(work.dir, 'root'), '--state-dir', join(work.dir, 'state'), '--config', join(work.dir, 'host.json'), '--log-level', 'warn']);
      expect(run.code, run.stdout + run.stderr).toBe(0);
      expect(existsSync(join(work.dir, 'root/srv/made/f.conf'))).toBe(true);
    } finally {
      work.cleanup();
    }
  });
});
