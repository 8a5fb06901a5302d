import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { straceMissing } from '../support/crash.js';
import { checkEveryCut } from '../support/powercut.js';
import { choicesAt, crashStates, treeAt, unitsOf } from '../support/powercut-model.js';
import { cutWorks } from '../support/powercut-scenes.js';
import { record } from '../support/powercut-trace.js';

const cleanups: Array<() => void> = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

/** The files of each recorded work in CI: all of the model over a 50-file apply (`npm run bench -- powercut-model` times the same). */
const FILES = 50;

describe.skipIf(straceMissing && !process.env.CI)('the power-cut model, on a recording of a small program (what it must find)', () => {
  it('a file renamed into place before its data is fsynced is found empty or torn at some cut; with the fsyncs, never', () => {
    const base = mkdtempSync(join(tmpdir(), 'mesh-host-model-'));
    cleanups.push(() => rmSync(base, { recursive: true, force: true }));
    const contents = (script: string) => {
      for (const name of ['a', 'a.tmp']) rmSync(join(base, name), { force: true });
      writeFileSync(join(base, 'a'), 'old\n');
      const rec = record(base, ['sh', '-c', script]);
      const units = unitsOf(rec.before, rec.ops);
      const seen = new Set<string>();
      for (let k = 0; k <= rec.ops.length; k++) {
        for (const state of crashStates(choicesAt(rec.ops, units, k))) {
          const tree = treeAt(rec.before, rec.ops, units, k, state);
          const ino = tree.paths.get('a');
          const node = ino === undefined ? undefined : tree.nodes.get(ino);
          seen.add(node?.type === 'file' ? node.bytes.toString() : 'none');
        }
      }
      return [...seen].sort();
    };
    // No fsync: the rename may reach the disk before the data (the old bytes, or an empty or torn new file).
    expect(contents(`printf 'new data\\n' > ${base}/a.tmp && mv ${base}/a.tmp ${base}/a`)).toEqual(['', 'new ', 'new data\n', 'old\n']);
    // The data fsynced before the rename: the old file or the new one, never anything between.
    expect(contents(`printf 'new data\\n' > ${base}/a.tmp && sync ${base}/a.tmp && mv ${base}/a.tmp ${base}/a && sync ${base}`)).toEqual(['new data\n', 'old\n']);
  });
});

describe.skipIf(straceMissing && !process.env.CI)(`every power cut of the host's durable work, simulated (${FILES} files a work in CI)`, () => {
  for (const [name, work] of Object.entries(cutWorks)) {
    it(`${name}: at every cut, in every tree the model allows, the store opens and nothing is leaked, missing, lost or doubled`, async () => {
      const { rec, reportsBefore, cleanup } = work(FILES);
      cleanups.push(cleanup);
      const checked = await checkEveryCut(rec, { reportsBefore });
      expect(checked.problems).toEqual([]);
      expect(checked.ops).toBeGreaterThan(10);
      expect(checked.trees).toBeGreaterThan(checked.ops);
    }, 1_200_000); // only ends a hang: minutes on two busy cores
  }

  // The sharing of a settle among trees that differ only in the root's files' bytes rests on the host's start
  // never reading them: here every tree is settled, and each settles as the one whose settle it would share.
  for (const name of ['first apply', 'archive unpack']) {
    it(`${name} (5 files): each tree settled by itself settles as the tree whose settle it shares`, async () => {
      const { rec, reportsBefore, cleanup } = cutWorks[name]!(5);
      cleanups.push(cleanup);
      const checked = await checkEveryCut(rec, { reportsBefore, proveSharing: true });
      expect(checked.problems).toEqual([]);
      expect(checked.settled).toBeLessThan(checked.trees);
    }, 600_000);
  }
});
