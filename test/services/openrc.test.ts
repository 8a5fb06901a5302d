import { describe, expect, it } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratch } from '../support/tree.js';
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

describe('OpenRC behind the same interface (a fake runner answering as its tools do)', () => {
  it('reads every unit from one call each of rc-service --list, rc-status and rc-update', async () => {
    const runner = fakeRunner({ 'rc-service': said('sshd\ncrond\nfail2ban\nnginx\n'), 'rc-status': said(status), 'rc-update': said(update) });
    const states = await openrcManager(runner).query(['sshd', 'crond', 'fail2ban', 'nginx', 'nothere']);
    expect(runner.calls.map((c) => c.command)).toEqual(['rc-service', 'rc-status', 'rc-update']);
    expect(states.get('sshd')).toMatchObject({ loadState: 'loaded', activeState: 'active', unitFileState: 'enabled' });
    expect(states.get('crond')).toMatchObject({ activeState: 'inactive', unitFileState: 'disabled' });
    expect(states.get('fail2ban')).toMatchObject({ activeState: 'failed', result: 'crashed', unitFileState: 'enabled' });
    // Installed and in no runlevel: rc-status does not list it, and it is stopped.
    expect(states.get('nginx')).toMatchObject({ loadState: 'loaded', activeState: 'inactive', unitFileState: 'disabled' });
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

  it('reads a started service whose process is gone as failed, and its PID stands for the invocation', async () => {
    const s = scratch('mesh-host-openrc-fake-');
    try {
      mkdirSync(join(s.dir, 'run/openrc/daemons/sshd'), { recursive: true });
      writeFileSync(join(s.dir, 'run/openrc/daemons/sshd/001'), 'exec=/usr/sbin/sshd\npidfile=/run/sshd.pid\n');
      writeFileSync(join(s.dir, 'run/sshd.pid'), '4242\n');
      mkdirSync(join(s.dir, 'proc/4242'), { recursive: true });
      writeFileSync(join(s.dir, 'proc/4242/stat'), '4242 (sshd) S 1 4242 4242 0 -1');
      // fail2ban: started by OpenRC's account, its conventional pidfile naming a process that is gone.
      writeFileSync(join(s.dir, 'run/fail2ban.pid'), '5151\n');
      const status2 = status.replace('fail2ban                                                          [  crashed  ]', 'fail2ban                                                          [  started  ]');
      const runner = fakeRunner({ 'rc-service': said('sshd\ncrond\nfail2ban\n'), 'rc-status': said(status2), 'rc-update': said(update) });
      const states = await openrcManager(runner, { root: s.dir }).query(['sshd', 'fail2ban', 'crond']);
      expect(states.get('sshd')).toMatchObject({ activeState: 'active', mainPid: 4242, invocationId: 'pid 4242' });
      expect(states.get('fail2ban')).toMatchObject({ activeState: 'failed', result: 'crashed', subState: 'crashed (its process 5151 from /run/fail2ban.pid is gone)', invocationId: 'pid 5151' });
      // A stopped service is not looked for.
      expect(states.get('crond')).toMatchObject({ activeState: 'inactive', mainPid: 0, invocationId: '' });
    } finally {
      s.cleanup();
    }
  });

  it('forces the dependency tree to be read again, as systemd is told daemon-reload', async () => {
    const runner = fakeRunner({ 'rc-update': said('') });
    await openrcManager(runner).daemonReload();
    expect(runner.calls.map((c) => [c.command, ...c.args].join(' '))).toEqual(['rc-update --update']);
  });
});
