import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyKilledAfter, applyNow, crashScene, leftBehind } from '../test/support/crash.js';

/**
 * The crash fuzz: `mesh-host apply` of 2,000 files killed (SIGKILL) at `instants` random instants,
 * each followed by an apply that drops them all; counts the runs that left anything behind (the
 * target is none). The test suite runs a few of these; this runs the full count.
 */
export async function benchCrash(instants: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-crash-'));
  try {
    const scene = crashScene(dir, 2000);
    const started = performance.now();
    if (applyNow(scene, scene.full).code !== 0) throw new Error('the whole run failed');
    const took = performance.now() - started;
    if (applyNow(scene, scene.empty).code !== 0) throw new Error('the drop failed');
    let killed = 0;
    const dirty: string[] = [];
    let recovered = 0;
    for (let i = 0; i < instants; i++) {
      const at = Math.round(Math.random() * took);
      if ((await applyKilledAfter(scene, at)).killed) killed++;
      const drop = applyNow(scene, scene.empty);
      if (/an apply was cut short/.test(drop.stderr)) recovered++;
      const left = leftBehind(scene);
      if (drop.code !== 0 || left.length > 0) dirty.push(`killed after ${at} ms: exit ${drop.code}, left ${left.length} (${left.slice(0, 3).join(', ')})`);
      if ((i + 1) % 20 === 0) console.error(`crash: ${i + 1} of ${instants}`);
    }
    return [
      '## Crash fuzz: kill -9 at random instants of a 2,000-file apply',
      '',
      `\`mesh-host apply\` of 2,000 files (10 directories) killed with SIGKILL at a random instant within one whole run's time (${Math.round(took)} ms here),`,
      'then `mesh-host apply` of a declaration without them; what is left on the root or in the state directory is counted.',
      '',
      '| instants | killed inside the apply | next start finished or undid an apply cut short | runs that left anything behind |',
      '| ---: | ---: | ---: | ---: |',
      `| ${instants} | ${killed} | ${recovered} | ${dirty.length} |`,
      ...(dirty.length > 0 ? ['', ...dirty.slice(0, 10).map((d) => `- ${d}`)] : []),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
