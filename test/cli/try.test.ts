import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { systemRunner } from '../../src/system/runner.js';
import { projectDir } from '../support/cli.js';
import { natsUnavailable } from '../support/nats.js';

/** What differs from one run to the next: the scratch folder, the port, the key, times, ages and the declaration's digest. */
function normalized(line: string): string {
  return line
    .replace(/\/tmp\/mesh-host-try\.[A-Za-z0-9]+/g, '<scratch>')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:<port>')
    .replace(/public key [A-Z2-7]{56}/g, 'public key <key>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<time>')
    .replace(/sha256:[0-9a-f]{64}/g, 'sha256:<digest>')
    .replace(/\b\d+(\.\d+)?(ms|s|m|h) ago\b/g, '<age> ago')
    .replace(/\s+/g, ' ')
    .trim()
    // The fleet view's last column: whether the first heartbeat has come yet is a matter of timing.
    .replace(/^(example converged .*) (never|<age> ago)$/, '$1 <heartbeat>');
}

/** The output README.md shows under its first command. */
function readmeOutput(): string[] {
  const readme = readFileSync(join(projectDir, 'README.md'), 'utf8');
  const block = /```sh\nbash scripts\/try\.sh\n```[\s\S]*?```text\n([\s\S]*?)\n```/.exec(readme);
  if (!block) throw new Error("README.md shows no output of scripts/try.sh (a ```text block after its first command)");
  return block[1]!.split('\n');
}

/** README's lines that hold on every machine: the inventory's headings, then every line from the nats-server on. */
function checkedLines(shown: string[]): string[] {
  const mesh = shown.findIndex((l) => l.startsWith('== a nats-server'));
  return [...shown.slice(0, mesh).filter((l) => /^(== |[a-z ]+:$)/.test(l)), ...shown.slice(mesh)].filter((l) => l !== '…');
}

/** README's first command, as an operator runs it: the whole loop on loopback, then everything stopped. */
const unavailable = natsUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`README's first command${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  it('bash scripts/try.sh enrols a host, puts an archive, sends a change that unpacks it and the same again, shows the reports, the host and the fleet, and stops; README shows what it prints', async () => {
    // The suite has installed and built already (npm test builds first): setup is skipped, so dist/ is
    // not rebuilt under the tests running beside this one.
    const run = await systemRunner().run('bash', [join(projectDir, 'scripts/try.sh')], { timeoutMs: 240_000, env: { ...process.env, LC_ALL: 'C', MESH_HOST_SETUP_DONE: '1' } });
    const scratch = /scratch left in (\/tmp\/mesh-host-try\.[A-Za-z0-9]+)/.exec(run.stdout)?.[1];
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain('report 1: genesis converged');
    expect(run.stdout).toMatch(/report 2: delivery converged \(.*done\)\n( {2}done .*\n)* {2}done archive site-1 \/srv\/site\n/);
    // The same declaration again: a no-op, every step unchanged.
    expect(run.stdout).toMatch(/report 3: delivery converged \(\d+ unchanged\)/);
    expect(run.stdout).toContain('./index.html: <h1>Served from an archive the mesh unpacked.</h1>');
    expect(run.stdout).toMatch(/"link": "up"/);
    expect(run.stdout).toMatch(/^example +converged +converged /m);
    expect(scratch).toBeDefined();

    // README's copy, line by line and in order.
    const printed = run.stdout.split('\n').map(normalized);
    let at = 0;
    for (const line of checkedLines(readmeOutput())) {
      const found = printed.indexOf(normalized(line), at);
      expect(found, `README.md shows a line scripts/try.sh did not print (after its line ${at}): ${line}\nit printed:\n${run.stdout}`).toBeGreaterThanOrEqual(0);
      at = found + 1;
    }
  }, 300_000);
});
