import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LABEL } from '../../src/kinds/container/engine-request.js';
import { peekState } from '../../src/core/store/store.js';
import { projectDir, runCli } from '../support/cli.js';
import { leaks, pathsUnder } from '../support/leaks.js';
import { container, skip, unavailable, useContainerScene } from './scene.js';

/** `mesh-host apply` as an operator runs it, with the engine's socket in its configuration, killed mid-way. */
describe.skipIf(skip)(`a host killed between making a container and saving${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const scene = useContainerScene();
  let ref: string;
  beforeAll(async () => {
    ref = await scene.podman.pushImage('crash');
  });

  it('leaks nothing: the next apply finds the container by its labels, records it, and makes no second one', async () => {
    const dir = join(scene.podman.scratch, 'crash');
    mkdirSync(join(dir, 'root'), { recursive: true });
    const found = pathsUnder(join(dir, 'root'));
    const state = join(dir, 'state');
    // A long pause between the looks: the save comes after it, so the kill lands between create and save.
    writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'crash', containerSocket: scene.podman.socket, verifyPauseMs: 20_000 }));
    const decl = join(dir, 'decl.json');
    writeFileSync(decl, JSON.stringify({ version: 1, node: 'crash', mode: 'converged', sequence: 1, resources: [container({ ref })] }));
    const args = ['apply', decl, '--root', join(dir, 'root'), '--state-dir', state, '--config', join(dir, 'host.json'), '--log-level', 'warn', '--json'];

    const child = spawn(process.execPath, [join(projectDir, 'bin/mesh-host'), ...args], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // Killed as soon as the engine holds the host's container.
    for (;;) {
      if ((await scene.engine.list([`${LABEL.resource}=web`])).length > 0) break;
      if (child.exitCode !== null) throw new Error(`mesh-host apply ended (${child.exitCode}) before it made the container`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    child.kill('SIGKILL');
    await exited;
    expect(peekState(state)?.records.web).toBeUndefined();

    writeFileSync(join(dir, 'host.json'), JSON.stringify({ node: 'crash', containerSocket: scene.podman.socket, verifyPauseMs: 500 }));
    const again = await runCli('mesh-host', args);
    expect(again.code, again.stdout + again.stderr).toBe(0);
    const made = await scene.engine.list([`${LABEL.node}=crash`]);
    expect(made).toHaveLength(1);
    expect(made[0]!.state).toBe('running');
    expect(peekState(state)?.records.web).toMatchObject({ type: 'container', target: 'web', container: { id: made[0]!.id } });
    // Nor on the root or in the state directory: all there is what the store records.
    expect(leaks({ root: join(dir, 'root'), stateDir: state }, found)).toEqual([]);
  });
});
