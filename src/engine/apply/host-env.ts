import type { Accounts } from '../converge/unix-accounts.js';
import type { HandlerTable } from '../converge/converge.js';
import type { Facts } from '../report/report.js';
import type { Outbox } from '../report/outbox.js';
import type { Store } from '../../core/store/store.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import type { ManagerChoice } from '../../machine/services/choose.js';
import type { FirewallEnv } from '../../machine/filters/settle.js';

/** Everything an apply needs from the host, passed in. */
export interface HostEnv {
  node: string;
  root: string;
  stateDir: string;
  store: Store;
  log: Logger;
  clock: Clock;
  accounts: Accounts;
  /** Every resource kind this host applies (host/env/host-environment.ts makes the table). */
  handlers: HandlerTable;
  /** The facts a report carries (links, filters…); an apply from a file may know none. */
  facts?: () => Promise<Partial<Facts>>;
  /** The service manager, for the found firewall's retirement (the services' handler has its own way to it). */
  serviceManager?: () => Promise<ManagerChoice>;
  /** Where reports wait for the link; every report made is written here before the store is saved. */
  outbox?: Outbox;
  /** Reads the machine's filters and retires its found firewall after a converged apply. */
  firewall?: FirewallEnv;
}
