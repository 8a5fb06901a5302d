import { describe, expect, it } from 'vitest';
import { openrcManager } from '../../src/services/openrc.js';
import { fakeRunner, said } from '../support/fake-runner.js';

// As rc-status --all --nocolor and rc-update show default print them on Alpine.
const status = `Runlevel: default
 sshd                                                              [  started  ]
 crond                                                             [  stopped  ]
 fail2ban                                                          [  crashed  ]
Dynamic Runlevel: needed/wanted
 networking                                                        [  started  ]
`;
const update = `                sshd |      default
            fail2ban |      default
`;

describe('OpenRC behind the same interface (a fake runner answering as rc-status and rc-update do)', () => {
  it('reads every unit from one rc-status and one rc-update call', async () => {
    const runner = fakeRunner({ 'rc-status': said(status), 'rc-update': said(update) });
    const states = await openrcManager(runner).query(['sshd', 'crond', 'fail2ban', 'nothere']);
    expect(runner.calls.map((c) => c.command)).toEqual(['rc-status', 'rc-update']);
    expect(states.get('sshd')).toMatchObject({ loadState: 'loaded', activeState: 'active', unitFileState: 'enabled' });
    expect(states.get('crond')).toMatchObject({ activeState: 'inactive', unitFileState: 'disabled' });
    expect(states.get('fail2ban')).toMatchObject({ activeState: 'failed', result: 'crashed', unitFileState: 'enabled' });
    // A service OpenRC does not know is not a stopped one.
    expect(states.get('nothere')).toMatchObject({ loadState: 'not-found' });
  });

  it('acts through rc-service and rc-update, and names a failure', async () => {
    const runner = fakeRunner({
      'rc-service': (args) => (args[1] === 'start' ? said('') : said('', 1, ' * ERROR: fail2ban failed to stop\n')),
      'rc-update': said(''),
    });
    const m = openrcManager(runner);
    await m.act('fail2ban', 'start');
    await m.setEnabled('fail2ban', true);
    await expect(m.act('fail2ban', 'stop')).rejects.toThrow(/rc-service fail2ban stop failed: \* ERROR: fail2ban failed to stop/);
    expect(runner.calls.map((c) => [c.command, ...c.args].join(' '))).toEqual(['rc-service fail2ban start', 'rc-update add fail2ban default', 'rc-service fail2ban stop']);
  });
});
