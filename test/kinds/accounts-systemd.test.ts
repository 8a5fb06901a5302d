import { describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import { useApplyInside } from '../support/apply-inside.js';
import { containerUnavailable, startSystemdContainer } from '../support/systemd-container.js';

/**
 * Users and groups on a real machine: mesh-host applying inside a systemd booted in a container over a
 * volatile copy of this machine's root, with the machine's own useradd and groupadd, read back by getent.
 */
const unavailable = containerUnavailable();
describe.skipIf(unavailable !== undefined && !process.env.CI)(`users and groups on a real machine${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const inside = useApplyInside('accounts', { start: (binds) => startSystemdContainer({ binds }) });
  const { apply } = inside;
  const getent = async (db: string, name: string) => (await inside.container.exec('getent', [db, name])).stdout.trim();

  const declared: Resource[] = [
    { type: 'file', id: 'motd', path: '/srv/deploy.motd', content: 'hi\n', owner: 'deploy', group: 'deployers', mode: '0640' },
    { type: 'user', id: 'deploy', name: 'deploy', group: 'deployers', shell: '/bin/sh', comment: 'Deploys', home: '/home/deploy' } as Resource,
    { type: 'group', id: 'deployers', name: 'deployers', system: true } as Resource,
  ];

  it('makes the group, the user and a file it owns; getent reads them; a second apply changes nothing; removal deletes both', async () => {
    const state = `${inside.work}/accounts-state`;
    const first = await apply(declared, { state });
    expect(first.code, JSON.stringify(first.report)).toBe(0);
    expect(first.report.steps.map((s) => s.resource)).toEqual(['deployers', 'deploy', 'motd']);
    const group = (await getent('group', 'deployers')).split(':');
    const user = (await getent('passwd', 'deploy')).split(':');
    expect(Number(group[2])).toBeLessThan(1000);
    expect([user[3], user[4], user[5], user[6]]).toEqual([group[2], 'Deploys', '/home/deploy', '/bin/sh']);
    const owner = (await inside.container.exec('stat', ['-c', '%u:%g', '/srv/deploy.motd'])).stdout.trim();
    expect(owner).toBe(`${user[2]}:${group[2]}`);

    const again = await apply(declared, { state, sequence: 2 });
    expect(again.code).toBe(0);
    expect(again.report.steps.filter((s) => s.status !== 'unchanged')).toEqual([]);

    const removed = await apply([], { state, sequence: 3 });
    expect(removed.code, JSON.stringify(removed.report)).toBe(0);
    expect(await getent('passwd', 'deploy')).toBe('');
    expect(await getent('group', 'deployers')).toBe('');
  });
});
