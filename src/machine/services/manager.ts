/** What the service manager says of one unit, read in one batched query. */
export interface UnitState {
  unit: string;
  /** `loaded`, `not-found`, `masked`…: a unit that does not exist is told apart from a stopped one. */
  loadState: string;
  activeState: string;
  subState: string;
  result: string;
  unitFileState: string;
  /** Changes on every start, automatic restarts included. */
  invocationId: string;
  /** Automatic restarts so far. */
  nRestarts: number;
  mainPid: number;
  /** A job queued for the unit (a start just asked for, not yet begun). */
  job: string;
}

export type UnitAction = 'start' | 'stop' | 'restart' | 'reload';

/** The small interface every service manager answers; a fake that answers as systemd does serves the fast tests. */
export interface ServiceManager {
  readonly name: 'systemd' | 'openrc';
  /** Directories whose files define units: a change there needs a daemon-reload. */
  readonly unitDirectories: readonly string[];
  /** Every unit in one call. */
  query(units: readonly string[]): Promise<Map<string, UnitState>>;
  /** Asks for an action and returns once the manager accepted it: never a wait for the unit to come up. */
  act(unit: string, action: UnitAction): Promise<void>;
  setEnabled(unit: string, enabled: boolean): Promise<void>;
  daemonReload(): Promise<void>;
}

export class ServiceManagerError extends Error {
  override name = 'ServiceManagerError';
}

export const isRunning = (s: UnitState) => s.activeState === 'active' || s.activeState === 'reloading';
/** Starting: activating, or a start job queued and not yet begun. */
export const isStarting = (s: UnitState) => s.activeState === 'activating' || (s.job !== '' && s.activeState === 'inactive');
export const exists = (s: UnitState) => s.loadState !== 'not-found';

export function describeState(s: UnitState): string {
  return `ActiveState=${s.activeState}, SubState=${s.subState}, Result=${s.result}`;
}
