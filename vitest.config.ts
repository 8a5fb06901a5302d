import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The fast tests (`npm run test:unit`): in-process, over scratch folders, fakes and pure definitions;
 * none starts a process, a server, a container or a tool (they pass with nats-server, systemd-nspawn,
 * podman, nft, strace and tar all off the PATH). Everything else is the `real` project, which starts
 * the real components it tests against. A file joins this list only if it needs none of them.
 */
const UNIT = [
  'test/containers/no-engine.test.ts',
  'test/containers/verdicts.test.ts',
  'test/containers/sealed-env.test.ts',
  'test/declaration/**/*.test.ts',
  'test/lifecycle/**/*.test.ts',
  'test/apply/dry-run.test.ts',
  'test/cli/args.test.ts',
  'test/daemon/heap-fit.test.ts',
  'test/daemon/locked-store.test.ts',
  'test/daemon/remembered-kept.test.ts',
  'test/firewall/decide.test.ts',
  'test/firewall/kept.test.ts',
  'test/firewall/owners.test.ts',
  'test/firewall/read.test.ts',
  'test/firewall/settle.test.ts',
  'test/fleet/rollout-decide.test.ts',
  'test/fleet/rows.test.ts',
  'test/inventory/verdicts.test.ts',
  'test/archive/arrival.test.ts',
  'test/bench/scale-page.test.ts',
  'test/bench/link-trace.test.ts',
  'test/link/notices.test.ts',
  'test/link/numbering-marks.test.ts',
  'test/link/report-trust.test.ts',
  'test/report/format.test.ts',
  'test/report/sent.test.ts',
  'test/report/speak.test.ts',
  'test/resources/apply-order.test.ts',
  'test/resources/converge.test.ts',
  'test/resources/line-changes.test.ts',
  'test/resources/write-batch.test.ts',
  'test/services/openrc.test.ts',
  'test/services/services.test.ts',
  'test/services/systemd-parse.test.ts',
  'test/services/unit-watcher.test.ts',
  'test/store/save-slices.test.ts',
  'test/store/store.test.ts',
  'test/watch/footprint.test.ts',
  'test/watch/units-left.test.ts',
];

/**
 * The power cuts in a real guest kernel: a project of their own, which `npm test` runs in a vitest of its
 * own beside the others (scripts/test-beside.sh says why).
 */
const GUEST = ['test/powercut/guest.test.ts'];

/**
 * The newcomer's fresh machine (test/newcomer/) runs in the suite, and first: its run is minutes of
 * installing from Debian's and npm's registries, mostly waiting on them, so the other files run beside
 * it on the other worker instead of after it. A step of its own after the suite would add all those
 * minutes to CI; started last by the default order (small files last on a fresh clone), nearly as many.
 * The power-cut model over four 50-file works (test/faults/powercut.test.ts) is minutes of one worker's
 * CPU in a small file: it starts at once too, on the other worker (the newcomer's files, one after
 * another, on the first), not last.
 */
const FIRST = ['/test/faults/powercut.test.ts', '/test/newcomer/'];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification) => {
      const i = FIRST.findIndex((part) => spec.moduleId.includes(part));
      return i < 0 ? FIRST.length : i;
    };
    return sorted.map((spec, i) => ({ spec, i })).sort((a, b) => rank(a.spec) - rank(b.spec) || a.i - b.i).map(({ spec }) => spec);
  }
}

export default defineConfig({
  test: {
    // Bounds that only end a run that hangs: the tests wait on events, and a loaded CI machine (two busy
    // loops beside the suite) makes a real daemon's apply or a container's start several times slower.
    testTimeout: 180_000,
    hookTimeout: 240_000,
    // Two cores: containers and servers started by tests share them.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      { extends: true, test: { name: 'real', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...UNIT, ...GUEST] } },
      { extends: true, test: { name: 'guest', include: GUEST } },
    ],
    sequence: { sequencer: LongestFirst },
  },
});
