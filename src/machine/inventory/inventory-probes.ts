import { complaint, failedToRun, firstLine, type Probe } from './verdict.js';

/** States of `systemctl is-system-running` that mean systemd is the init and answering. */
const SYSTEMD_UP = new Set(['initializing', 'starting', 'running', 'degraded', 'maintenance', 'stopping']);

export const systemdProbe: Probe = {
  name: 'systemd',
  command: 'systemctl',
  args: ['is-system-running'],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    // Exits non-zero for every state but `running`, `degraded` included: read what it says.
    const state = firstLine(result.stdout);
    if (SYSTEMD_UP.has(state)) {
      return { present: true, detail: state, reason: `systemd answers as init, system state '${state}'` };
    }
    if (/not been booted with systemd/i.test(result.stderr + result.stdout)) {
      return { present: false, detail: '', reason: firstLine(result.stderr + '\n' + result.stdout) };
    }
    if (state === 'offline') {
      return { present: false, detail: '', reason: "systemd is not the init of this machine (systemctl says 'offline')" };
    }
    return { present: false, detail: '', reason: `systemctl gave no system state: ${complaint(result)}` };
  },
};

export const openrcProbe: Probe = {
  name: 'openrc',
  command: 'rc-status',
  args: ['--runlevel'],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    const runlevel = firstLine(result.stdout);
    if (result.code === 0 && runlevel) {
      return { present: true, detail: runlevel, reason: `OpenRC answers, runlevel '${runlevel}'` };
    }
    return { present: false, detail: '', reason: `rc-status did not name a runlevel: ${complaint(result)}` };
  },
};

/** A container client on disk with its daemon down is not a runtime: ask the daemon. */
export const dockerProbe: Probe = {
  name: 'docker',
  command: 'docker',
  args: ['version', '--format', '{{.Server.Version}}'],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    const version = firstLine(result.stdout);
    if (result.code === 0 && version) {
      return { present: true, detail: version, reason: `the docker daemon answers, version ${version}` };
    }
    return { present: false, detail: '', reason: `the docker client is installed but its daemon does not answer: ${complaint(result)}` };
  },
};

export const podmanProbe: Probe = {
  name: 'podman',
  command: 'podman',
  args: ['info', '--format', '{{.Version.Version}}'],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    const version = firstLine(result.stdout);
    if (result.code === 0 && version) return { present: true, detail: version, reason: `podman answers, version ${version}` };
    return { present: false, detail: '', reason: `podman does not function: ${complaint(result)}` };
  },
};

function packageQuery(name: string, command: string, args: string[], what: string): Probe {
  return {
    name,
    command,
    args,
    read(result) {
      const failed = failedToRun(result);
      if (failed) return failed;
      const answer = firstLine(result.stdout);
      if (result.code === 0 && answer) {
        return { present: true, detail: answer, reason: `the package database answers a query for ${what}: ${answer}` };
      }
      return { present: false, detail: '', reason: `the package database did not answer a query for ${what}: ${complaint(result)}` };
    },
  };
}

export const dpkgProbe = packageQuery('dpkg', 'dpkg-query', ['-W', '-f=${Package} ${Version}\\n', 'dpkg'], 'dpkg');
export const rpmProbe = packageQuery('rpm', 'rpm', ['-q', 'rpm'], 'rpm');
export const apkProbe = packageQuery('apk', 'apk', ['info', '-e', 'apk-tools'], 'apk-tools');

/** Listing the ruleset needs the privilege as well as the tool: that is the function asked for. */
export const nftablesProbe: Probe = {
  name: 'nftables',
  command: 'nft',
  args: ['-j', 'list', 'ruleset'],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    if (result.code !== 0) return { present: false, detail: '', reason: `nft cannot list the ruleset: ${complaint(result)}` };
    try {
      const parsed = JSON.parse(result.stdout) as { nftables?: Array<Record<string, unknown>> };
      const tables = (parsed.nftables ?? []).filter((item) => 'table' in item).length;
      const version = (parsed.nftables?.find((item) => 'metainfo' in item)?.metainfo as { version?: string } | undefined)?.version;
      return {
        present: true,
        detail: `${version ? `nftables ${version}, ` : ''}${tables} table${tables === 1 ? '' : 's'}`,
        reason: 'nft lists the ruleset',
      };
    } catch {
      return { present: false, detail: '', reason: 'nft answered, but not with a JSON ruleset' };
    }
  },
};

export const iptablesLegacyProbe: Probe = {
  name: 'iptables-legacy',
  command: 'iptables-legacy-save',
  args: [],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    if (result.code !== 0) return { present: false, detail: '', reason: `iptables-legacy-save failed: ${complaint(result)}` };
    const tables = result.stdout.split('\n').filter((line) => line.startsWith('*')).length;
    return {
      present: true,
      detail: `${tables} legacy table${tables === 1 ? '' : 's'} in use`,
      reason: 'iptables-legacy-save lists the legacy ruleset',
    };
  },
};

export const fail2banProbe: Probe = {
  name: 'fail2ban',
  command: 'fail2ban-client',
  args: ['ping'],
  read(result) {
    const failed = failedToRun(result);
    if (failed) return failed;
    if (result.code === 0 && /pong/i.test(result.stdout)) {
      return { present: true, detail: 'server answers', reason: 'fail2ban-server replied to a ping' };
    }
    return { present: false, detail: '', reason: `fail2ban-server does not answer: ${complaint(result)}` };
  },
};

/** The capabilities the inventory reports, by kind. */
export const CAPABILITIES = {
  serviceManager: [systemdProbe, openrcProbe],
  containerRuntime: [dockerProbe, podmanProbe],
  packageDatabase: [dpkgProbe, rpmProbe, apkProbe],
  firewall: [nftablesProbe, iptablesLegacyProbe],
  intrusionPrevention: [fail2banProbe],
} as const satisfies Record<string, readonly Probe[]>;

export type CapabilityKind = keyof typeof CAPABILITIES;
