import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootArchive, bootGuest } from '../test/support/guest.js';
import { freshData, powerCutBench, powerCutScenarios, type CutResult, type PowerCutBench } from '../test/support/guest-cuts.js';
import { median } from './stats.js';
import { projectDir } from '../test/support/cli.js';
import { podmanFigures, type PodmanFigures } from './powercut-podman.js';

/** Seconds from QEMU's start to the guest's init running its first line, and to a clean power-off of an empty boot. */
async function bootTimes(bench: PowerCutBench, runs: number): Promise<{ up: number[]; off: number[] }> {
  const boot = bootArchive(join(bench.dir, 'empty-boot.tar'), { 'run.sh': 'true' });
  const data = freshData(bench.dir, 'boot-time');
  const up: number[] = [];
  const off: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const guest = bootGuest({ system: bench.system, data, tools: bench.tools, boot });
    await guest.waitFor('up');
    up.push((performance.now() - started) / 1000);
    await guest.exited;
    off.push((performance.now() - started) / 1000);
  }
  return { up, off };
}

const KINDS = ['lost', 'leaked', 'doubled'];

/** The container scenario's guest said, with what one boot of it measured when the scenario ran. */
function podmanSentence(f: PodmanFigures | undefined): string {
  const guest = "The container replacement runs in a variant of the guest with Debian's podman 4.3 (crun, conmon; rootful with no systemd: cgroupfs, events in a file, overlay storage on the data disk, a default network of the loopback alone) and a busybox image made on this machine, loaded once";
  if (!f) return `${guest}.`;
  return `${guest}: podman's API answers ${f.engine.toFixed(1)} s after QEMU starts (${f.engineInGuest.toFixed(1)} s after the service is started, by the guest's clock, the start of the node that asks included), \`mesh-host apply\` of a first container takes ${f.create.toFixed(1)} s, its replacement (the spec changed) ${f.replace.toFixed(1)} s, an apply with nothing to do ${f.noop.toFixed(1)} s.`;
}

/**
 * Power cuts in a real guest kernel (test/support/guest-cuts.ts): each scenario's work run once whole (its
 * length), then cut `cuts` times at a random instant inside that length, each cut followed by a boot
 * that checks what it left. POWERCUT_CUTS narrows it; POWERCUT_SCENARIOS (names, comma-separated) picks.
 */
export async function benchPowerCut(cuts: number, only?: string[]): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-host-powercut-'));
  let bench: PowerCutBench | undefined;
  try {
    // The guest's system is kept in the checkout's .cache/ (ignored by git), as the test keeps it.
    bench = await powerCutBench(dir, join(projectDir, '.cache'));
    const rows: string[] = [];
    const notes: string[] = [];
    let times: { up: number[]; off: number[] } | undefined;
    let podman: PodmanFigures | undefined;
    for (const scenario of powerCutScenarios()) {
      if (only && !only.includes(scenario.name)) continue;
      times ??= await bootTimes(bench, 2);
      if (scenario.name === 'container-replacement') podman = await podmanFigures(bench.dir, bench.cache).catch((err: Error) => void console.error(`powercut: the podman guest's figures: ${err.message}`));
      let prepared: string;
      let whole: Awaited<ReturnType<typeof scenario.cut>>;
      try {
        prepared = await scenario.prepare(bench);
        whole = await scenario.cut(bench, prepared, undefined);
      } catch (err) {
        // One scenario that cannot run does not cost the others their figures: its row says why.
        rows.push(`| ${scenario.name} | could not run: ${(err as Error).message.split('\n')[0]!.slice(0, 200)} | | | | | | | |`);
        console.error(`powercut ${scenario.name}: ${(err as Error).message}`);
        continue;
      }
      if (whole.problems.length > 0) {
        rows.push(`| ${scenario.name} | the whole run, with no cut, failed its checks | | | | | | | |`);
        for (const p of whole.problems.slice(0, 5)) notes.push(`- ${scenario.name}, whole run: ${p}`);
        continue;
      }
      const results: CutResult[] = [];
      for (let i = 0; i < cuts; i++) {
        const at = Math.round(Math.random() * whole.workMs);
        // A cut the harness could not make (the emulator failing by itself, say) is said and counted
        // apart; it costs the run neither its other cuts nor its other scenarios.
        const result = await scenario.cut(bench, prepared, at).catch((err: Error): CutResult => ({ at, inside: false, problems: [`the cut could not be made: ${err.message.split('\n').slice(0, 3).join(' ')}`], found: { 'could not be made': 1 } }));
        results.push(result);
        console.error(`powercut ${scenario.name}: cut ${i + 1} of ${cuts} at ${at} ms: ${result.inside ? 'inside the work' : 'after it'}, ${result.problems.length} problems`);
        for (const p of result.problems.slice(0, 5)) notes.push(`- ${scenario.name}, cut at ${at} ms: ${p}`);
      }
      const count = (kind: string) => results.reduce((n, r) => n + (r.found[kind] ?? 0), 0);
      const other = results.reduce((n, r) => n + Object.entries(r.found).filter(([k]) => !KINDS.includes(k)).reduce((m, [, v]) => m + v, 0), 0);
      const row = `| ${scenario.name} | ${(whole.workMs / 1000).toFixed(1)} s | ${cuts} | ${results.filter((r) => r.inside).length} | ${results.filter((r) => r.problems.length === 0).length} | ${count('lost')} | ${count('leaked')} | ${count('doubled')} | ${other} |`;
      // Said as each scenario ends: a run stopped early keeps the rows of the scenarios it finished.
      console.error(`powercut row: ${row}`);
      rows.push(row);
    }
    return [
      '## Power cuts in a real guest kernel',
      '',
      '`npm run bench -- powercut` (POWERCUT_CUTS=N cuts a scenario, 20 by default; POWERCUT_SCENARIOS=a,b picks): a Debian 12 guest',
      "made by mmdebstrap from Debian's packages (minbase with iproute2 and busybox-static; the kernel of linux-image-amd64 downloaded, not installed; an",
      'initramfs of busybox and the modules the guest needs, written by the harness; a shell script as init, no systemd),',
      "its kernel unpacked once and booted through its PVH entry under qboot, by qemu-system-x86_64 under QEMU's own emulator",
      "(`-accel tcg,thread=multi -cpu max`, 2 vCPUs, 1 GB): this machine's",
      "/dev/kvm is PVM, under which a Debian kernel never leaves its decompressor. The host's data disk is ext4 mounted with",
      '`commit=60`, `vm.dirty_expire_centisecs` 6000: a minute of writes not synced is lost by a cut. A cut is `kill -9` of QEMU at a',
      "random instant inside the scenario's work (its length measured by one whole run first); the guest then boots again and checks.",
      podmanSentence(podman),
      '',
      times ? `Boot of the guest to its init's first line: ${median(times.up).toFixed(1)} s median of ${times.up.length} (an empty boot to its own power-off: ${median(times.off).toFixed(1)} s), on 2 cores shared with other work.` : '',
      '',
      '| scenario | work (whole run) | cuts | inside the work | cuts with every check passed | lost | leaked | doubled | other problems |',
      '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
      ...(notes.length > 0 ? ['', 'What the checks found:', '', ...notes.slice(0, 30)] : []),
    ];
  } finally {
    await bench?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
