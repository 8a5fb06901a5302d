import type { Actor } from 'xstate';
import type { unitWatcherMachine } from '../../../machines/unit-watcher.js';
import type { Clock } from '../../core/system/clock.js';
import type { ManagerChoice } from '../../machine/services/choose.js';
import type { ServiceManager, UnitState } from '../../machine/services/manager.js';

/** What the host gives the service handler: how the manager is chosen (once, when first needed), the clock, the pause between the two looks. */
export interface ServiceRuntime {
  manager: () => Promise<ManagerChoice>;
  clock: Clock;
  pauseMs: number;
  /**
   * Told at the end of each apply that had services, once its second look is done: what the apply last
   * saw of every unit it read. The unit watcher compares its first look with it (see watchUnits).
   */
  onLeft?: (left: UnitsLeft) => void;
}

/** The units as an apply last saw them, by unit. */
export type UnitsLeft = ReadonlyMap<string, UnitState>;

/**
 * Where a service sits (its unit), and that services stop before the files they read are removed (the
 * handler's shape, known without loading the handler's code).
 */
export const SERVICE_SHAPE = { target: (resource: { unit: string }): string => resource.unit, removalRank: 0 };

export interface WatchedUnit {
  resource: string;
  unit: string;
  actedAt: number;
  watcher: Actor<typeof unitWatcherMachine>;
}

/** What the service steps of one apply share: the manager, the states read in one batch, the watchers. */
export interface ServiceApply {
  manager: ServiceManager;
  clock: Clock;
  /** The pause between the two looks, shared by every unit of the apply. */
  pauseMs: number;
  states: Map<string, UnitState>;
  daemonReloaded: boolean;
  watched: WatchedUnit[];
  /** How many times the manager was asked for states (the benchmark counts them). */
  queries: number;
  /** The second look this apply took, for the report: which units, after how long a pause. */
  verified?: { units: string[]; pausedMs: number; tookMs: number };
}

export function serviceApply(manager: ServiceManager, clock: Clock, pauseMs: number): ServiceApply {
  return { manager, clock, pauseMs, states: new Map(), daemonReloaded: false, watched: [], queries: 0 };
}

export async function queryUnits(runtime: ServiceApply, units: readonly string[]): Promise<Map<string, UnitState>> {
  runtime.queries++;
  const states = await runtime.manager.query(units);
  for (const [unit, state] of states) runtime.states.set(unit, state);
  return states;
}
