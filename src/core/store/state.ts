import type { Mark } from '../declaration/order.js';
import type { Mode, ResourceType } from '../declaration/schema.js';
import type { Pause } from '../../../machines/pause.js';
import type { Waiting } from '../../engine/inhibit/defer.js';
import type { KindRecordFields } from '../../kinds/kind-specs.js';

export type { SeenFile } from '../../kinds/file/file-spec.js';
export type { OriginalContainer } from '../../kinds/container/container-spec.js';

/** Where a record came from: only records of a declaration's own origin are removed by it. */
export type Origin = 'local' | 'mesh';

/**
 * What the host remembers of something it applied: enough to check it again and to remove it. What it
 * keeps beyond this of one kind (a file's look, what an archive unpacked, a container's id) is the
 * kind's own, said in its spec.
 */
export interface ResourceRecord extends KindRecordFields {
  id: string;
  type: ResourceType;
  /** A path, or a unit. */
  target: string;
  origin: Origin;
  /** true when the host made it; false when it took over something found there. */
  created: boolean;
  /** For a taken thing: what was there, kept so that removal gives it back. */
  original?: OriginalRecord;
  /** A restart or replacement its lock holds off: kept until it is done or no longer due (across restarts). */
  deferred?: Waiting;
  appliedAt: string;
}

export interface OriginalRecord {
  kind: 'file' | 'directory';
  mode: number;
  uid: number;
  gid: number;
  /** For a file: the kept copy under taken/, by name. */
  copy?: string;
}

export interface HeldEntry {
  id: string;
  target: string;
  reason: string;
}


/**
 * The host's convergence state for a found firewall (ufw, firewalld): `found-inactive` when it was
 * inactive at the first look (never the mesh's doing), `retiring` once a retirement began (kept until
 * every step is done, so that one cut short is finished at the next apply), `retired` when the mesh
 * retired it.
 */
export interface FoundFirewallRecord {
  status: 'found-inactive' | 'retiring' | 'retired';
  /** When this status began. */
  since: string;
  /** While retiring: the steps done so far. */
  stepsDone?: string[];
  /** How many times the mesh retired it (it is retired again when enabled again by hand). */
  retirements?: number;
}

export interface StoreState {
  version: 1;
  mode?: Mode;
  records: Record<string, ResourceRecord>;
  held: HeldEntry[];
  lastApplied?: Mark & { at: string };
  /** The host's own report sequence: only ever increases, across restarts. */
  reportSequence: number;
  /** The digest of the bundle's declaration that genesis applied. */
  genesisDigest?: string;
  lastOutcome?: { outcome: 'converged' | 'failed' | 'refused'; at: string; message?: string; reportSequence: number };
  /** The fingerprint of the facts last reported: a quiet reconcile with the same one says nothing. */
  lastFingerprint?: string;
  /** The found firewalls' convergence state, by tool. */
  foundFirewall?: Partial<Record<'ufw' | 'firewalld', FoundFirewallRecord>>;
  /** Refusals by kind (stale, forged, wrong node…), counted. */
  refusals: Record<string, number>;
  /** Paused by hand (`mesh-host pause`): nothing is applied until `mesh-host resume` or its end. */
  pause?: Pause;
}

export function emptyState(): StoreState {
  return { version: 1, records: recordTable(), held: [], reportSequence: 0, refusals: {} };
}

/**
 * A table of records by id, with no prototype: V8 keeps such an object as a hash table from the start.
 * A plain object given a thousand ids one by one (or spread) builds a chain of a thousand hidden
 * classes first: copying 1,000 records that way took 10 to 17 ms of a one-shot apply, against under
 * one this way. It also means no id ever meets a name inherited from Object.prototype.
 */
export function recordTable(from?: Readonly<Record<string, ResourceRecord>>): Record<string, ResourceRecord> {
  const table = Object.create(null) as Record<string, ResourceRecord>;
  if (from) for (const id in from) table[id] = from[id]!;
  return table;
}
