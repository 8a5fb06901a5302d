/**
 * The service definitions `mesh-host install` writes and the release ships (packaging/ holds them as
 * generated for the default paths). Both run `mesh-host launch` from the `current` release, stop it
 * with a TERM to the launcher alone and give it 120 s: past the host's own 60 s wait for the apply in
 * flight and the launcher's 75 s grace for a host on trial, so a stop never cuts a save off.
 */
import { CURRENT, EXECUTABLE, RELEASES_DIR } from '../../core/system/default-paths.js';

/** Where a release's executable is run from, and the flags the launcher is given (non-default paths). */
export interface UnitLayout {
  /** The `current` release's executable, as the running system sees it. */
  executable: string;
  /** Extra arguments for `mesh-host launch` (`--state-dir DIR`, `--config FILE`) when not the defaults. */
  launchArgs: string[];
  /**
   * Who puts the definition there: `mesh-host install` (the default), whose launcher tries each release
   * the mesh names, or the Debian package, which apt updates: there the host runs alone (`mesh-host run`).
   */
  origin?: 'install' | 'package';
}

/** What the service runs and the words that say who wrote it, by the layout's origin. */
function serviceOf(layout: UnitLayout): { command: 'launch' | 'run'; header: string } {
  if (layout.origin === 'package') {
    return { command: 'run', header: '# mesh-host, the node host. Installed by the mesh-host Debian package: apt updates it, and the\n# host runs alone, with no launcher.' };
  }
  return { command: 'launch', header: `# mesh-host, the node host. Written by \`mesh-host install\`, which puts each release under\n# ${RELEASES_DIR}/<version>/ and links \`current\` to the one that runs.` };
}

export const DEFAULT_EXECUTABLE = `${RELEASES_DIR}/${CURRENT}/${EXECUTABLE}`;
export const DEFAULT_LAYOUT: UnitLayout = { executable: DEFAULT_EXECUTABLE, launchArgs: [] };

/**
 * The environment both service managers give the launcher (and so its hosts): glibc's malloc with one
 * arena instead of one a thread, and its fixed trim threshold, which gives the top of the heap back past
 * 128 KiB free instead of letting the threshold climb with the largest block ever freed. A daemon
 * applying back to back held about 2 MB less with them (docs/bench.md, "The link").
 */
export const MEMORY_ENV = ['MALLOC_ARENA_MAX=1', 'MALLOC_TRIM_THRESHOLD_=131072', 'MALLOC_TOP_PAD_=0'];

/** The stop's bound, in seconds, for both service managers. */
export const STOP_TIMEOUT_S = 120;
/** Exit statuses that need an operator (usage, a store that cannot be read): never restarted. */
export const NO_RESTART_STATUSES = [2, 4] as const;

const quoted = (arg: string) => (/^[A-Za-z0-9_./=@:+-]+$/.test(arg) ? arg : `"${arg.replace(/(["\\$`])/g, '\\$1')}"`);

export function systemdUnit(layout: UnitLayout = DEFAULT_LAYOUT): string {
  const service = serviceOf(layout);
  const exec = [layout.executable, service.command, ...layout.launchArgs].map(quoted).join(' ');
  return `${service.header}
[Unit]
Description=mesh-host: converges this machine to what the mesh declares, and reports
Wants=network-online.target
After=network-online.target

[Service]
Type=exec
# One malloc arena, trimmed past 128 KiB free: a daemon applying back to back stays smaller (docs/bench.md,
# "The link"). The launcher's hosts inherit it. (V8's settings are made by the host itself: a single
# executable takes no V8 flags, and NODE_OPTIONS voids its code cache.)
${MEMORY_ENV.map((e) => `Environment=${e}`).join('\n')}
${service.command === 'launch' ? "# The launcher runs the current release's host, and tries a new release on trial when the mesh names one.\n" : ''}ExecStart=${exec}
# SIGHUP (passed on by the launcher) moves the host to the bus its configuration names, between applies.
ExecReload=kill -HUP $MAINPID
# SIGTERM to the launcher alone: it ends its hosts between applies (the host waits up to 60 s for the
# apply in flight, a host on trial is given 75 s), and the systemctl an apply may be running is never cut.
KillMode=mixed
TimeoutStopSec=${STOP_TIMEOUT_S}
Restart=on-failure
RestartSec=2
# A usage error or a store that cannot be read (exit 2, 4) needs an operator, not a restart.
RestartPreventExitStatus=${NO_RESTART_STATUSES.join(' ')}

[Install]
WantedBy=multi-user.target
`;
}

export function openrcScript(layout: UnitLayout = DEFAULT_LAYOUT): string {
  const service = serviceOf(layout);
  return `#!/sbin/openrc-run
${service.header}

description="mesh-host: converges this machine to what the mesh declares, and reports"
command="${layout.executable}"
command_args="${[service.command, ...layout.launchArgs].map(quoted).join(' ').replace(/"/g, '\\"')}"
# supervise-daemon restarts the launcher when it crashes; the launcher stops the service itself when its
# host ended needing an operator (exit ${NO_RESTART_STATUSES.join(' or ')}), which supervise-daemon cannot tell apart.
supervisor="supervise-daemon"
# One malloc arena, trimmed past 128 KiB free, as under systemd; the launcher's hosts inherit it.
supervise_daemon_args="--env MESH_HOST_OPENRC_SERVICE=\${RC_SVCNAME}${MEMORY_ENV.map((e) => ` --env ${e}`).join('')}"
respawn_delay=2
respawn_max=0
# TERM to the launcher, which ends its hosts between applies; KILL only after ${STOP_TIMEOUT_S} s.
retry="TERM/${STOP_TIMEOUT_S}/KILL/5"
output_log="/var/log/mesh-host.log"
error_log="/var/log/mesh-host.log"
extra_started_commands="reload"

depend() {
\tuse net
\tafter firewall networking
}

reload() {
\tebegin "Moving \${RC_SVCNAME} to the bus its configuration names"
\tsupervise-daemon "\${RC_SVCNAME}" --signal HUP
\teend $?
}
`;
}
