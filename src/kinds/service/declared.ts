import type { StoreState } from '../../core/store/state.js';
import type { ServiceManager } from '../../machine/services/manager.js';

export interface DeclaredServiceState {
  id: string;
  unit: string;
  loadState: string;
  activeState: string;
  subState: string;
  unitFileState: string;
}

/** The states of the services in the footprint, in one batched read; empty when there are none. */
export async function declaredServiceStates(state: Pick<StoreState, 'records'> | undefined, manager: ServiceManager | undefined): Promise<DeclaredServiceState[] | { reason: string }> {
  const records = Object.values(state?.records ?? {}).filter((r) => r.type === 'service');
  if (records.length === 0) return [];
  if (!manager) return { reason: 'no service manager functions here' };
  try {
    const states = await manager.query(records.map((r) => r.target));
    return records.map((r) => {
      const s = states.get(r.target)!;
      return { id: r.id, unit: r.target, loadState: s.loadState, activeState: s.activeState, subState: s.subState, unitFileState: s.unitFileState };
    });
  } catch (err) {
    return { reason: (err as Error).message };
  }
}

export function formatServiceStates(states: DeclaredServiceState[] | { reason: string }): string[] {
  if (!Array.isArray(states)) return [`  (not read: ${states.reason})`];
  return states.map((s) => `  ${s.unit.padEnd(28)} ${s.activeState}/${s.subState}${s.loadState === 'loaded' ? '' : ` (LoadState=${s.loadState})`}, ${s.unitFileState || 'no unit file'} [${s.id}]`);
}
