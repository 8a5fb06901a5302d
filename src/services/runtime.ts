import type { Actor } from 'xstate';
import type { unitWatcherMachine } from '../../machines/unit-watcher.js';
import type { Clock } from '../system/clock.js';
import type { ServiceManager, UnitState } from './manager.js';

export interface WatchedUnit {
  resource: string;
  unit: string;
  actedAt: number;
  watcher: Actor<typeof unitWatcherMachine>;
}

/** What the service steps of one apply share: the manager, the states read in one batch, the watchers. */
export interface ServiceRuntime {
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

export function serviceRuntime(manager: ServiceManager, clock: Clock, pauseMs: number): ServiceRuntime {
  return { manager, clock, pauseMs, states: new Map(), daemonReloaded: false, watched: [], queries: 0 };
}

export async function queryUnits(runtime: ServiceRuntime, units: readonly string[]): Promise<Map<string, UnitState>> {
  runtime.queries++;
  const states = await runtime.manager.query(units);
  for (const [unit, state] of states) runtime.states.set(unit, state);
  return states;
}
