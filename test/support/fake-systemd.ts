import type { Clock } from '../../src/core/system/clock.js';
import { ServiceManagerError, type ServiceManager, type UnitAction, type UnitState } from '../../src/machine/services/manager.js';
import { SYSTEMD_UNIT_DIRECTORIES } from '../../src/machine/services/systemd.js';

/** How a fake unit behaves once started, as real ones do. */
export type Behaviour =
  | { kind: 'stays' }
  | { kind: 'dies'; afterMs: number }
  | { kind: 'restarts'; everyMs: number }
  | { kind: 'slowReady'; afterMs: number };

interface FakeUnit {
  behaviour: Behaviour;
  enabled: boolean;
  startedAt?: number;
  invocation: number;
}

/** A clock the test moves: sleeping advances it at once. */
export function fakeClock(): Clock & { advance(ms: number): void; slept: number[] } {
  let t = 0;
  const slept: number[] = [];
  return {
    slept,
    now: () => new Date(Date.UTC(2026, 11, 1) + t),
    monotonic: () => t,
    boot: () => ({ bootId: 'fake-boot', ms: t }),
    sleep: async (ms) => {
      slept.push(ms);
      t += ms;
    },
    advance: (ms) => void (t += ms),
    // Nothing here waits on a timer: the services' pause is a sleep.
    after: () => () => {},
    random: () => 0.5,
  };
}

/** A service manager that answers as systemd does, over units the test defines. */
export class FakeSystemd implements ServiceManager {
  readonly name = 'systemd' as const;
  readonly unitDirectories = SYSTEMD_UNIT_DIRECTORIES;
  readonly calls: string[] = [];
  private readonly units = new Map<string, FakeUnit>();

  constructor(private readonly clock: Clock) {}

  define(unit: string, behaviour: Behaviour = { kind: 'stays' }, options: { running?: boolean; enabled?: boolean } = {}): this {
    const u: FakeUnit = { behaviour, enabled: options.enabled ?? false, invocation: 0 };
    if (options.running) {
      u.startedAt = this.clock.monotonic() - 1_000_000;
      u.invocation = 1;
    }
    this.units.set(unit, u);
    return this;
  }

  uninstall(unit: string): void {
    this.units.delete(unit);
  }

  actions(): string[] {
    return this.calls.filter((c) => !c.startsWith('query'));
  }

  private stateOf(name: string): UnitState {
    const u = this.units.get(name);
    const base = { unit: name, invocationId: '', nRestarts: 0, mainPid: 0, job: '', result: 'success' };
    if (!u) return { ...base, loadState: 'not-found', activeState: 'inactive', subState: 'dead', unitFileState: '' };
    const unitFileState = u.enabled ? 'enabled' : 'disabled';
    if (u.startedAt === undefined) return { ...base, loadState: 'loaded', activeState: 'inactive', subState: 'dead', unitFileState };
    const age = this.clock.monotonic() - u.startedAt;
    const running = { ...base, loadState: 'loaded', activeState: 'active', subState: 'running', unitFileState, invocationId: `inv-${u.invocation}`, mainPid: 100 + u.invocation };
    switch (u.behaviour.kind) {
      case 'stays':
        return running;
      case 'dies':
        return age < u.behaviour.afterMs ? running : { ...running, activeState: 'failed', subState: 'failed', result: 'exit-code', mainPid: 0 };
      case 'slowReady':
        return age < u.behaviour.afterMs ? { ...running, activeState: 'activating', subState: 'start' } : running;
      case 'restarts': {
        const restarts = Math.floor(age / u.behaviour.everyMs);
        return { ...running, nRestarts: restarts, invocationId: `inv-${u.invocation}-${restarts}` };
      }
    }
  }

  async query(units: readonly string[]): Promise<Map<string, UnitState>> {
    this.calls.push(`query ${units.join(' ')}`);
    return new Map(units.map((u) => [u, this.stateOf(u)]));
  }

  async act(unit: string, action: UnitAction): Promise<void> {
    this.calls.push(`${action} ${unit}`);
    const u = this.units.get(unit);
    if (!u) throw new ServiceManagerError(`systemctl ${action} ${unit} failed: Unit ${unit} not found.`);
    if (action === 'stop') u.startedAt = undefined;
    else if (action === 'reload') {
      if (u.startedAt === undefined) throw new ServiceManagerError(`systemctl reload ${unit} failed: ${unit} is not active, cannot reload.`);
    } else {
      u.startedAt = this.clock.monotonic();
      u.invocation++;
    }
  }

  async setEnabled(unit: string, enabled: boolean): Promise<void> {
    this.calls.push(`${enabled ? 'enable' : 'disable'} ${unit}`);
    const u = this.units.get(unit);
    if (!u) throw new ServiceManagerError(`Unit file ${unit} does not exist.`);
    u.enabled = enabled;
  }

  async daemonReload(): Promise<void> {
    this.calls.push('daemon-reload');
  }
}
