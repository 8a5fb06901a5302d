import { readlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { ServiceManager } from '../../machine/services/manager.js';
import { daemonOf, type OpenrcDaemon } from '../../machine/services/openrc.js';
import type { UnitLook, UnitProbe } from './unit-watch.js';

/** A full look through the manager at least this often, whatever the marks say (a safety net). */
const FULL_LOOK_EVERY = 30;

/**
 * How the unit watcher looks, by manager.
 *
 * systemd: it keeps a link `/run/systemd/units/invocation:UNIT` to the invocation id of each unit while it
 * runs, removed when the unit stops or fails and replaced when it restarts. Reading those links costs no
 * process, so that is the look between two full ones; only when a link changed (and every minute besides)
 * does the watcher ask `systemctl show` for all the units in one call, and the verdict is always what
 * systemd says there. Where the links are not kept (an older systemd), every look is a full one.
 *
 * OpenRC keeps no state of a daemon that died, so the watcher does what its query does, without a
 * process: the pidfile OpenRC recorded, and whether the process it names is alive.
 */
export function unitProbe(manager: ServiceManager, root: string): UnitProbe {
  if (manager.name === 'systemd') return systemdProbe(manager, root);
  return async (units) => {
    const looks = new Map<string, UnitLook>();
    for (const unit of units) looks.set(unit, openrcLook(daemonOf(root, unit)));
    return looks;
  };
}

/**
 * One OpenRC service as the watcher sees it. A daemon of its own is up while the process its pidfile
 * names lives. A supervised one (supervise-daemon) is up while its supervisor lives; the supervisor
 * starts the daemon again when it ends, which shows as a new child and one more respawn counted.
 */
export function openrcLook(daemon: OpenrcDaemon | undefined): UnitLook {
  if (!daemon) return { activeState: 'inactive', subState: 'stopped (no pidfile)', invocationId: '', nRestarts: 0 };
  const { supervised } = daemon;
  if (!daemon.alive) {
    const what = supervised ? `unsupervised (its supervisor ${daemon.pid} from ${daemon.pidfile} is gone)` : `crashed (its process ${daemon.pid} from ${daemon.pidfile} is gone)`;
    return { activeState: 'failed', subState: what, invocationId: `pid ${supervised?.childPid ?? daemon.pid}`, nRestarts: supervised?.respawns ?? 0 };
  }
  if (!supervised) return { activeState: 'active', subState: 'started', invocationId: `pid ${daemon.pid}`, nRestarts: 0 };
  return supervised.childAlive
    ? { activeState: 'active', subState: 'started (supervised)', invocationId: `pid ${supervised.childPid}`, nRestarts: supervised.respawns }
    : { activeState: 'activating', subState: `respawning (its process ${supervised.childPid} is gone; supervise-daemon ${daemon.pid} starts it again)`, invocationId: `pid ${supervised.childPid}`, nRestarts: supervised.respawns };
}

function systemdProbe(manager: ServiceManager, root: string): UnitProbe {
  const mark = (unit: string) => {
    try {
      return readlinkSync(join(root, 'run/systemd/units', `invocation:${unit}`));
    } catch {
      return '';
    }
  };
  let last: { marks: string[]; looks: Map<string, UnitLook> } | undefined;
  let sinceFull = 0;
  return async (units) => {
    const marks = units.map(mark);
    const unchanged = last !== undefined && marks.every((m, i) => m === last!.marks[i]);
    // The links are to be trusted only if every unit the last full look saw running had one.
    const linksKept = last !== undefined && units.every((u, i) => !isUp(last!.looks.get(u)) || marks[i] !== '');
    if (unchanged && linksKept && ++sinceFull < FULL_LOOK_EVERY) return last!.looks;
    sinceFull = 0;
    const looks = await manager.query(units);
    last = { marks: units.map(mark), looks };
    return looks;
  };
}

const isUp = (look: UnitLook | undefined) => look !== undefined && (look.activeState === 'active' || look.activeState === 'reloading');
