import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import { useApplyInside } from '../support/apply-inside.js';
import { openrcUnavailable, startOpenrcContainer } from '../support/openrc-tree.js';

/**
 * Services through Debian's OpenRC (rc-service, rc-update, rc-status), in a container over a Debian tree
 * that carries it, with mesh-host running inside and converging that container's root.
 */
const unavailable = openrcUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`services on a real OpenRC${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const inside = useApplyInside('openrc', { start: (binds) => startOpenrcContainer({ binds }), config: { serviceManager: 'openrc' } });
  const { apply } = inside;

  const script = (name: string, body: string): Resource => ({ type: 'file', id: `${name}-script`, path: `/etc/init.d/${name}`, mode: '0755', content: `#!/sbin/openrc-run\n${body}\n` });
  const daemon = (command: string, args: string) => `command=${command}\ncommand_args="${args}"\ncommand_background=true\npidfile=/run/\${RC_SVCNAME}.pid`;
  const service = (name: string, extra: object = {}): Resource => ({ type: 'service', id: name, unit: name, state: 'running', enabled: true, restartOn: [`${name}-script`], ...extra });
  const rc = async (command: string, args: string[]) => (await inside.container.exec(command, args)).stdout;

  it('starts and enables a service, verifies it at the second look, and does nothing to it the next time', async () => {
    const state = join(inside.work, 'calm-state');
    const resources = [script('calm', daemon('/bin/sleep', '1000')), service('calm')];
    const first = await apply(resources, { state });
    expect(first.code, JSON.stringify(first.report)).toBe(0);
    expect(first.report.steps.find((s) => s.resource === 'calm')!.actions).toEqual(expect.arrayContaining(['start', 'enable']));
    expect(first.report.said).toContainEqual(expect.stringMatching(/^second look at calm after a pause of \d+ ms/));
    expect(await rc('rc-service', ['calm', 'status'])).toMatch(/started/);
    expect(await rc('rc-update', ['show', 'default'])).toMatch(/calm \|.*default/);
    const again = await apply(resources, { state, sequence: 2 });
    expect(again.code).toBe(0);
    expect(again.report.steps.map((s) => s.status)).toEqual(['unchanged', 'unchanged']);
    expect(again.report.said.some((s) => s.startsWith('second look'))).toBe(false);
  });

  it('a service that dies a moment after it started fails the apply, named', async () => {
    const { code, report } = await apply([script('dies', daemon('/bin/sh', "-c 'sleep 0.3; exit 1'")), service('dies')]);
    expect(code, JSON.stringify(report)).toBe(1);
    expect(report.error?.resource).toBe('dies');
    // Caught by the second look on a quiet machine; on a loaded one the first look can already come after the death.
    expect(report.error?.message).toMatch(/^dies (was running at the first look and is not at the second|is not running right after start)/);
  });

  it('a file change restarts the service that names it; removing the resource stops and disables it', async () => {
    const state = join(inside.work, 'conf-state');
    const resources = (conf: string): Resource[] => [
      script('web', daemon('/bin/sleep', '1001')),
      { type: 'file', id: 'web-conf', path: '/etc/web.conf', content: conf },
      service('web', { restartOn: ['web-script', 'web-conf'] }),
    ];
    expect((await apply(resources('a'), { state })).code).toBe(0);
    const pidBefore = await rc('cat', ['/run/web.pid']);
    const changed = await apply(resources('b'), { state, sequence: 2 });
    expect(changed.code, JSON.stringify(changed.report)).toBe(0);
    expect(changed.report.steps.find((s) => s.resource === 'web')!.actions).toEqual(['restart (web-conf changed)']);
    expect(await rc('cat', ['/run/web.pid'])).not.toBe(pidBefore);
    const removed = await apply([], { state, sequence: 3 });
    expect(removed.code, JSON.stringify(removed.report)).toBe(0);
    expect(await rc('rc-service', ['web', 'status']).catch(() => '')).not.toMatch(/status: started/);
    expect(await rc('rc-update', ['show', 'default'])).not.toMatch(/\bweb\b/);
  });

  it('a service OpenRC does not know, declared stopped, fails, named', async () => {
    const { code, report } = await apply([{ type: 'service', id: 'ghost', unit: 'ghost', state: 'stopped' }]);
    expect(code).toBe(1);
    expect(report.error).toEqual({ resource: 'ghost', message: expect.stringMatching(/^ghost does not exist/) });
  });
});
