import { describe, expect, it } from 'vitest';
import { formatKeptFoundFirewalls, keptFoundFirewalls } from '../../src/machine/filters/filter-kept.js';

describe('the found firewall as the store keeps it, for mesh-host status', () => {
  it('names each recorded tool in words: found inactive, retiring with its steps, retired, retired again', () => {
    const kept = keptFoundFirewalls({
      foundFirewall: {
        ufw: { status: 'retired', since: '2026-01-02T00:00:00.000Z', retirements: 3 },
        firewalld: { status: 'retiring', since: '2026-01-01T00:00:00.000Z', stepsDone: ['systemctl disable firewalld.service'], retirements: 0 },
      },
    });
    expect(kept).toEqual([
      { tool: 'ufw', state: 'retired-again', status: 'retired', since: '2026-01-02T00:00:00.000Z', retirements: 3 },
      { tool: 'firewalld', state: 'retiring', status: 'retiring', since: '2026-01-01T00:00:00.000Z', stepsDone: ['systemctl disable firewalld.service'], retirements: 0 },
    ]);
    expect(formatKeptFoundFirewalls(kept)).toEqual([
      'found firewall:',
      '  ufw        retired again at 2026-01-02T00:00:00.000Z: enabled again by hand after the mesh retired it, 3 retirements in all',
      '  firewalld  retiring since 2026-01-01T00:00:00.000Z (done: systemctl disable firewalld.service): the next apply finishes it',
    ]);
  });

  it('retired once is retired; found inactive is never the mesh doing; nothing recorded says so', () => {
    expect(keptFoundFirewalls({ foundFirewall: { ufw: { status: 'retired', since: 't', retirements: 1 } } })[0]!.state).toBe('retired');
    expect(formatKeptFoundFirewalls(keptFoundFirewalls({ foundFirewall: { ufw: { status: 'found-inactive', since: 't' } } }))).toEqual(['found firewall:', "  ufw        found inactive at t: recorded as found, never the mesh's doing"]);
    expect(keptFoundFirewalls({})).toEqual([]);
    expect(formatKeptFoundFirewalls([])).toEqual(['found firewall:  none recorded (none found active, or not looked at yet)']);
  });
});
