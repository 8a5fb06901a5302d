import type { ServiceManager } from '../services/manager.js';
import { daemonOf } from '../services/openrc.js';
import type { UnitLook, UnitProbe } from './units.js';

/**
 * How the unit watcher looks, by manager. systemd: one batched `systemctl show` for every unit (its
 * InvocationID and NRestarts tell a restart apart). OpenRC keeps no state of a daemon that died, so the
 * watcher does what its query does, without a process: the pidfile OpenRC recorded, and whether the
 * process it names is alive (file reads only).
 */
export function unitProbe(manager: ServiceManager, root: string): UnitProbe {
  if (manager.name === 'systemd') return (units) => manager.query(units);
  return async (units) => {
    const looks = new Map<string, UnitLook>();
    for (const unit of units) {
      const daemon = daemonOf(root, unit);
      looks.set(unit, daemon
        ? { activeState: daemon.alive ? 'active' : 'failed', subState: daemon.alive ? 'started' : `crashed (its process ${daemon.pid} from ${daemon.pidfile} is gone)`, invocationId: `pid ${daemon.pid}`, nRestarts: 0 }
        : { activeState: 'inactive', subState: 'stopped (no pidfile)', invocationId: '', nRestarts: 0 });
    }
    return looks;
  };
}
