import { checkEveryCut } from '../test/support/powercut.js';
import { cutWorks } from '../test/support/powercut-scenes.js';

/**
 * The power-cut model over the host's durable work (test/support/powercut-*.ts): each work recorded
 * with strace from the real program, every cut point, every tree the model allows there (each choice
 * against the others' extremes past 4,096 combinations at one cut), each settled as the next start
 * settles it and checked (trees that differ only in the bytes of files under the root share one settle:
 * neither the start nor the check reads them). The suite runs the same works with 50 files; this runs `files`.
 */
export async function benchPowercutModel(files: number): Promise<string[]> {
  const rows: string[] = [];
  const problems: string[] = [];
  for (const [name, work] of Object.entries(cutWorks)) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    const { rec, reportsBefore, cleanup } = work(files);
    try {
      const checked = await checkEveryCut(rec, { reportsBefore });
      const seconds = ((performance.now() - started) / 1000).toFixed(0);
      const used = process.cpuUsage(cpu);
      const cpuSeconds = ((used.user + used.system) / 1e6).toFixed(0);
      rows.push(`| ${name} | ${checked.ops} | ${checked.states} | ${checked.trees} | ${checked.settled} | ${checked.bounded} | ${checked.problems.length === 0 ? 0 : `${checked.problems.length}+`} | ${cpuSeconds} s | ${seconds} s |`);
      problems.push(...checked.problems.map((p) => `- ${name}: ${p}`));
      console.error(`powercut-model: ${name} done (${checked.trees} trees)`);
    } finally {
      cleanup();
    }
  }
  return [
    '## Power cuts, simulated at every cut point',
    '',
    `Each work of the host recorded with strace from \`mesh-host apply\` (${files} files; the archive: ${files} files in one archive; the outbox: the fourth apply of four whose reports wait unsent),`,
    'then at every cut point (before each recorded operation and after the last) every tree the power-cut model of docs/design.md allows',
    '(past 4,096 combinations at one cut, each choice against all the others kept and all lost: the cuts so bounded are counted), rebuilt, settled as the next start settles it',
    '(the lock taken, the store opened, an apply cut short finished or undone) and checked: the store opens; the root holds what was found and what the store records, no more, no less;',
    'nothing in the state directory the store does not account for (no temporary); every report the store counts waits in the outbox, none lost, none reused.',
    'Trees that differ only in the bytes of files under the root share one settle: neither the start nor the check reads those bytes (the suite settles every tree of a 5-file first apply and archive unpack to show that each settles as the tree it would share with).',
    'CPU: this process\'s, user and system (the check: the recorded programs are its children; the settle\'s calls made in turn on its thread, test/support/calls-in-turn.ts); took: the wall time, the recording included.',
    `Command: \`POWERCUT_FILES=${files} npm run bench -- powercut-model\` (50 when not given; the suite runs the same works with 50 files: \`test/faults/powercut.test.ts\`).`,
    '',
    '| work | operations recorded | crash states | distinct trees checked | trees settled | cuts bounded | trees with a problem | CPU | took |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    ...(problems.length > 0 ? ['', ...problems.slice(0, 10)] : []),
  ];
}
