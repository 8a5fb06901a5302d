import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyNow, crashScene, type CrashScene } from './crash.js';
import { gnuTar, inlineArchive } from './archives.js';
import { record, type Recording } from './powercut-trace.js';

/** A scene for the power-cut model: in memory where there is a tmpfs (its trees are many and small). */
export function cutScene(files: number): { dir: string; scene: CrashScene; cleanup(): void } {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'mesh-host-cut-'));
  const scene = crashScene(dir, files, Math.min(10, files));
  mkdirSync(scene.state, { recursive: true, mode: 0o700 });
  return { dir, scene, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Records `mesh-host apply` of a declaration in a scene (the inputs kept outside what is recorded). */
function recordApply(dir: string, scene: CrashScene, declaration: string): Recording {
  // The declarations and the configuration sit beside root/ and state/: moved out of what is rebuilt.
  const rec = record(dir, [process.execPath, ...scene.args(declaration)]);
  if (rec.code !== 0) throw new Error(`the recorded apply failed (${rec.code}): ${rec.stderr}`);
  return rec;
}

/** What the power-cut test and benchmark run: each gives the recording of one piece of the host's durable work. */
export const cutWorks: Record<string, (files: number) => { rec: Recording; reportsBefore: number; cleanup(): void }> = {
  /** A first converge of `files` files into ten directories. */
  'first apply': (files) => {
    const s = cutScene(files);
    return { rec: recordApply(s.dir, s.scene, s.scene.full), reportsBefore: 0, cleanup: s.cleanup };
  },
  /** A drift put right: a tenth of the files changed by hand, then the same declaration applied again. */
  drift: (files) => {
    const s = cutScene(files);
    const first = applyNow(s.scene, s.scene.full);
    if (first.code !== 0) throw new Error(first.stderr);
    for (let i = 0; i < files; i += 10) writeFileSync(join(s.scene.root, `srv/app/d${i % 10}/f${i}.conf`), 'changed by hand\n');
    return { rec: recordApply(s.dir, s.scene, s.scene.full), reportsBefore: 1, cleanup: s.cleanup };
  },
  /** An archive of `files` files unpacked into a directory of its own. */
  'archive unpack': (files) => {
    const s = cutScene(1);
    const src = join(s.dir, 'src');
    mkdirSync(join(src, 'etc'), { recursive: true });
    for (let i = 0; i < files; i++) writeFileSync(join(src, 'etc', `a${i}.conf`), `value = ${i}\n`);
    const tarball = join(s.dir, 'a.tar.gz');
    gnuTar(['-czf', tarball, '-C', src, 'etc']);
    rmSync(src, { recursive: true });
    const declaration = join(s.dir, 'archive.json');
    writeFileSync(declaration, JSON.stringify({ version: 1, node: 'crash', mode: 'converged', sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }, inlineArchive('bundle', '/srv/app/unpacked', tarball)] }));
    return { rec: recordApply(s.dir, s.scene, declaration), reportsBefore: 0, cleanup: s.cleanup };
  },
  /** The outbox filling: the fourth of four applies in a row whose reports wait unsent (each says what changed). */
  outbox: (files) => {
    const s = cutScene(files);
    const full = JSON.parse(readFileSync(s.scene.full, 'utf8')) as { resources: Array<{ content?: string }> };
    const nth = (n: number) => {
      const path = join(s.dir, `n${n}.json`);
      writeFileSync(path, JSON.stringify({ ...full, sequence: n, resources: full.resources.map((r) => (r.content ? { ...r, content: `${r.content}${n}\n` } : r)) }));
      return path;
    };
    for (let n = 1; n <= 3; n++) {
      const r = applyNow(s.scene, nth(n));
      if (r.code !== 0) throw new Error(r.stderr);
    }
    return { rec: recordApply(s.dir, s.scene, nth(4)), reportsBefore: 3, cleanup: s.cleanup };
  },
};
