import { describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { systemRunner } from '../../src/system/runner.js';
import { projectDir } from '../support/cli.js';
import { natsUnavailable } from '../support/nats.js';

/** README's first command, as an operator runs it: the whole loop on loopback, then everything stopped. */
const unavailable = natsUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`README's first command${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  it('bash scripts/try.sh enrols a host, sends a change and the same again, shows the three reports, and stops', async () => {
    // The suite has installed and built already (npm test builds first): setup is skipped, so dist/ is
    // not rebuilt under the tests running beside this one.
    const run = await systemRunner().run('bash', [join(projectDir, 'scripts/try.sh')], { timeoutMs: 240_000, env: { ...process.env, LC_ALL: 'C', MESH_HOST_SETUP_DONE: '1' } });
    const scratch = /scratch left in (\/tmp\/mesh-host-try\.[A-Za-z0-9]+)/.exec(run.stdout)?.[1];
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain('report 1: genesis converged');
    expect(run.stdout).toMatch(/report 2: delivery converged \(.*done\)/);
    // The same declaration again: a no-op, every step unchanged.
    expect(run.stdout).toMatch(/report 3: delivery converged \(\d+ unchanged\)/);
    expect(run.stdout).toMatch(/"link": "up"/);
    expect(scratch).toBeDefined();
  }, 300_000);
});
