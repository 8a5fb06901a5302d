import type { Mode } from '../../core/declaration/schema.js';
import type { FoundFirewallRecord } from '../../core/store/state.js';
import { isLive, type Look } from './found.js';

/** What the host does about one found firewall after an apply. */
export type Decision =
  /** Nothing to do or say. */
  | { act: 'none' }
  /** Inactive at the first look: recorded as found so, never as the mesh's doing. */
  | { act: 'record-inactive' }
  /** Retire it; `because` says why, for the report. */
  | { act: 'retire'; because: 'found-active' | 'enabled-again' | 'active-since-found-inactive' | 'unfinished' }
  /** Not retired, and said why (a failed apply, an adopted machine, a look that failed). */
  | { act: 'leave'; because: 'apply-failed' | 'adopted' | 'unknown' };

/**
 * The retirement's rules, in one place. Only a converged machine after a converged apply retires
 * anything: the mesh's own filter is then in place, so the machine is never left open. A retirement
 * begun and not finished is finished whatever the tool says now; one the mesh finished is done again
 * when the firewall came back.
 */
export function decide(look: Look, record: FoundFirewallRecord | undefined, mode: Mode, converged: boolean): Decision {
  if (look.state === 'unknown') return { act: 'leave', because: 'unknown' };
  const live = isLive(look);
  if (!record && !live) return { act: 'record-inactive' };
  if (mode !== 'converged') return live ? { act: 'leave', because: 'adopted' } : { act: 'none' };
  if (!converged) return live || record?.status === 'retiring' ? { act: 'leave', because: 'apply-failed' } : { act: 'none' };
  if (record?.status === 'retiring') return { act: 'retire', because: 'unfinished' };
  if (!live) return { act: 'none' };
  if (record?.status === 'retired') return { act: 'retire', because: 'enabled-again' };
  if (record?.status === 'found-inactive') return { act: 'retire', because: 'active-since-found-inactive' };
  return { act: 'retire', because: 'found-active' };
}
