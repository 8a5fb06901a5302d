import { describe, expect, it } from 'vitest';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratch } from '../support/tree.js';
import { daemonOf, openrcManager } from '../../src/machine/services/openrc.js';
import { openrcLook } from '../../src/kinds/service/unit-probe.js';
import { unitChange } from '../../src/kinds/service/unit-watch.js';
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

  it('resets a started service whose daemon died (zap) before starting it, which OpenRC would otherwise say is already started', async () => {
    const s = scratch('mesh-host-openrc-fake-');
    try {
      mkdirSync(join(s.dir, 'run'), { recursive: true });
      writeFileSync(join(s.dir, 'run/web.pid'), '5151\n');
      const runner = fakeRunner({ 'rc-service': said('') });
      const m = openrcManager(runner, { root: s.dir });
      await m.act('web', 'start');
      await m.act('web', 'restart');
      // No pidfile: a stopped service is started as it is.
      await m.act('db', 'start');
      expect(runner.calls.map((c) => [c.command, ...c.args].join(' '))).toEqual(['rc-service web zap', 'rc-service web start', 'rc-service web restart', 'rc-service db start']);
    } finally {
      s.cleanup();
    }
  });

  it('a supervised service (supervise-daemon): its daemon is the supervisor\'s child, its respawns are counted, and the watcher hears them', async () => {
    const s = scratch('mesh-host-openrc-fake-');
    try {
      const proc = (pid: number, command: string, state = 'S') => {
        mkdirSync(join(s.dir, `proc/${pid}`), { recursive: true });
        writeFileSync(join(s.dir, `proc/${pid}/stat`), `${pid} (${command.split(' ')[0]}) ${state} 1 ${pid} ${pid} 0 -1`);
        writeFileSync(join(s.dir, `proc/${pid}/cmdline`), `${command.split(' ').join('\0')}\0`);
      };
      const options = (childPid: number, startCount: number) => {
        mkdirSync(join(s.dir, 'run/openrc/options/web'), { recursive: true });
        writeFileSync(join(s.dir, 'run/openrc/options/web/child_pid'), `${childPid}\n`);
        writeFileSync(join(s.dir, 'run/openrc/options/web/start_count'), `${startCount}\n`);
      };
      mkdirSync(join(s.dir, 'run'), { recursive: true });
      writeFileSync(join(s.dir, 'run/web.pid'), '100\n');
      proc(100, '/sbin/supervise-daemon web --start --pidfile /run/web.pid /usr/sbin/web');
      proc(101, '/usr/sbin/web');
      options(101, 0);
      const status3 = `Runlevel: default\n web [  started  ]\n`;
      const runner = fakeRunner({ 'rc-service': said('web\n'), 'rc-status': said(status3), 'rc-update': said('') });
      expect((await openrcManager(runner, { root: s.dir }).query(['web'])).get('web')).toMatchObject({ activeState: 'active', mainPid: 101, invocationId: 'pid 101', nRestarts: 0 });
      expect(openrcLook(daemonOf(s.dir, 'web'))).toEqual({ activeState: 'active', subState: 'started (supervised)', invocationId: 'pid 101', nRestarts: 0 });

      // Its daemon killed: the supervisor has not started it again yet, then has.
      rmSync(join(s.dir, 'proc/101'), { recursive: true });
      const respawning = openrcLook(daemonOf(s.dir, 'web'));
      expect(respawning).toMatchObject({ activeState: 'activating', invocationId: 'pid 101' });
      proc(102, '/usr/sbin/web');
      options(102, 1);
      const respawned = openrcLook(daemonOf(s.dir, 'web'));
      expect(respawned).toEqual({ activeState: 'active', subState: 'started (supervised)', invocationId: 'pid 102', nRestarts: 1 });
      expect(unitChange('web', openrcLook({ pid: 100, pidfile: '/run/web.pid', alive: true, supervised: { childPid: 101, childAlive: true, respawns: 0 } }), respawning)).toBeUndefined();
      expect(unitChange('web', respawning, respawned)).toBe('web was restarted by its manager (1 automatic restart)');

      // The supervisor itself killed: nothing starts the daemon again.
      rmSync(join(s.dir, 'proc/100'), { recursive: true });
      expect(openrcLook(daemonOf(s.dir, 'web'))).toMatchObject({ activeState: 'failed', subState: 'unsupervised (its supervisor 100 from /run/web.pid is gone)' });
      // A pidfile naming a living process that is no supervise-daemon: the options are another run's.
      proc(100, '/usr/sbin/web');
      expect(daemonOf(s.dir, 'web')).toEqual({ pid: 100, pidfile: '/run/web.pid', alive: true });
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
