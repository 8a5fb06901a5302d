import { describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { systemRunner } from '../../src/core/system/runner.js';
import { projectDir } from '../support/cli.js';
import { natsUnavailable } from '../support/nats.js';
import { tryOutputProblems, tryScratch } from '../support/try-output.js';

/** README's first command, as an operator runs it: the whole loop on loopback, then everything stopped. */
const unavailable = natsUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`README's first command${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  it('bash scripts/try.sh enrols a host, puts an archive, sends a change that unpacks it and the same again, shows the reports, the host and the fleet, serves the fleet page and prints its address, and stops; README shows what it prints', async () => {
    // The suite has installed and built already (npm test builds first): setup is skipped, so dist/ is
    // not rebuilt under the tests running beside this one.
    const run = await systemRunner().run('bash', [join(projectDir, 'scripts/try.sh')], { timeoutMs: 240_000, env: { ...process.env, LC_ALL: 'C', MESH_HOST_SETUP_DONE: '1' } });
    const scratch = tryScratch(run.stdout);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(tryOutputProblems(run.stdout), `it printed:\n${run.stdout}`).toEqual([]);
    // Its waits read each log only once it exists: no "grep: …/daemon.log: No such file or directory".
    expect(run.stderr).not.toMatch(/No such file or directory/);
  }, 300_000);
});
