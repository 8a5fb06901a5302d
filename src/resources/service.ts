import { createActor } from 'xstate';
import { unitWatcherMachine } from '../../machines/unit-watcher.js';
import type { ServiceResource } from '../declaration/schema.js';
import { stepOf, type Checked, type ConvergeContext, type ResourceHandler } from './types.js';
import { exists, isRunning, isStarting, type UnitAction, type UnitState } from '../services/manager.js';
import { queryUnits, type ServiceRuntime } from '../services/runtime.js';
import { lookAt, secondLook } from '../services/verify.js';

function runtimeOf(ctx: ConvergeContext): ServiceRuntime {
  if (!ctx.services) throw new Error('no service manager on this machine: declaring services needs systemd or OpenRC');
  return ctx.services;
}


/** The state of a unit: from the plan's one batched read, or read again once the apply has changed things. */
async function stateOf(runtime: ServiceRuntime, unit: string, fresh: boolean): Promise<UnitState> {
  const known = runtime.states.get(unit);
  if (known && !fresh) return known;
  const state = (await queryUnits(runtime, [unit])).get(unit);
  if (!state) throw new Error(`the service manager said nothing of ${unit}`);
  return state;
}

/** A changed file under a unit directory needs one daemon-reload, before any unit is acted on. */
async function reloadIfUnitFilesChanged(ctx: ConvergeContext, runtime: ServiceRuntime): Promise<void> {
  if (runtime.daemonReloaded) return;
  const dirs = runtime.manager.unitDirectories;
  if (![...ctx.changedPaths].some((p) => dirs.some((d) => p.startsWith(`${d}/`)))) return;
  await runtime.manager.daemonReload();
  runtime.daemonReloaded = true;
  // What was read before the reload may be stale (a unit just installed was not-found).
  runtime.states.clear();
}

interface Wanted {
  action?: UnitAction;
  /** Why the action (a restartOn file changed). */
  because?: string;
  enable?: boolean;
}

function decide(resource: ServiceResource, state: UnitState, ctx: ConvergeContext): Wanted {
  const wanted: Wanted = {};
  const up = isRunning(state) || isStarting(state);
  if (resource.state === 'running') {
    const changed = (resource.restartOn ?? []).filter((id) => ctx.changedFiles.has(id));
    if (!up) wanted.action = 'start';
    else if (changed.length > 0) {
      wanted.action = resource.reload ? 'reload' : 'restart';
      wanted.because = `${changed.join(', ')} changed`;
    }
  } else if (up) wanted.action = 'stop';
  if (resource.enabled !== undefined) {
    const enabledNow = state.unitFileState === 'enabled' || state.unitFileState === 'enabled-runtime';
    const fixed = ['static', 'indirect', 'generated', 'transient', 'alias'].includes(state.unitFileState);
    if (!fixed && resource.enabled !== enabledNow) wanted.enable = resource.enabled;
  }
  return wanted;
}

function actionsOf(w: Wanted): string[] {
  const actions: string[] = [];
  if (w.action) actions.push(w.because ? `${w.action} (${w.because})` : w.action);
  if (w.enable !== undefined) actions.push(w.enable ? 'enable' : 'disable');
  return actions;
}

export const serviceHandler: ResourceHandler<ServiceResource> = {
  async converge(resource, ctx, apply): Promise<Checked> {
    const runtime = runtimeOf(ctx);
    const unit = resource.unit;
    const record = () => ctx.store.record({ id: resource.id, type: 'service', target: unit, origin: ctx.origin, created: true, appliedAt: ctx.now() });
    if (!apply) {
      const state = await stateOf(runtime, unit, false);
      if (!exists(state)) {
        // The plan cannot know whether this apply installs the unit: it says so; the apply decides.
        const w: Wanted = resource.state === 'running' ? { action: 'start' } : {};
        if (resource.enabled) w.enable = true;
        const actions = actionsOf(w);
        return { step: stepOf(resource, unit, actions.length ? actions : ['check']), verb: 'update', detail: `${unit} is not loaded yet (LoadState=not-found)` };
      }
      const actions = actionsOf(decide(resource, state, ctx));
      return actions.length ? { step: stepOf(resource, unit, actions), verb: 'update' } : { step: stepOf(resource, unit, []), verb: 'none' };
    }

    await reloadIfUnitFilesChanged(ctx, runtime);
    const state = await stateOf(runtime, unit, false);
    if (!exists(state)) {
      throw new Error(`${unit} does not exist (LoadState=${state.loadState}): it cannot be ${resource.state === 'running' ? 'started' : 'stopped'}; a unit that does not exist is not a stopped one`);
    }
    const w = decide(resource, state, ctx);
    const actions = actionsOf(w);
    if (w.action === 'stop') await runtime.manager.act(unit, 'stop');
    if (w.enable !== undefined) await runtime.manager.setEnabled(unit, w.enable);
    if (w.action && w.action !== 'stop') {
      const actedAt = runtime.clock.monotonic();
      await runtime.manager.act(unit, w.action);
      const watcher = createActor(unitWatcherMachine, { input: { unit, action: w.action } }).start();
      const first = await stateOf(runtime, unit, true);
      watcher.send({ type: 'FIRST_LOOK', look: lookAt(first, runtime.clock.monotonic() - actedAt) });
      const snapshot = watcher.getSnapshot();
      if (snapshot.status === 'done' && !snapshot.output.accepted) {
        record();
        throw new Error(snapshot.output.message);
      }
      runtime.watched.push({ resource: resource.id, unit, actedAt, watcher });
    }
    record();
    return actions.length ? { step: stepOf(resource, unit, actions), verb: 'update' } : { step: stepOf(resource, unit, []), verb: 'none' };
  },

  async remove(record, ctx, apply): Promise<Checked> {
    const runtime = runtimeOf(ctx);
    const state = await stateOf(runtime, record.target, apply);
    if (!exists(state)) {
      // Uninstalled since: removing what is already gone succeeds.
      if (apply) ctx.store.forget(record.id);
      return { step: stepOf(record, record.target, ['remove']), verb: 'remove', detail: `${record.target} is no longer installed; nothing to stop` };
    }
    const actions = ['remove'];
    const up = isRunning(state) || isStarting(state);
    const enabled = state.unitFileState === 'enabled';
    if (up) actions.push('stop');
    if (enabled) actions.push('disable');
    if (apply) {
      if (up) await runtime.manager.act(record.target, 'stop');
      if (enabled) await runtime.manager.setEnabled(record.target, false);
      ctx.store.forget(record.id);
    }
    return { step: stepOf(record, record.target, actions), verb: 'remove' };
  },

  /** Every unit the apply needs (declared and removed), in one batched read of the service manager. */
  async prepare(resources, removing, ctx) {
    const units = [...removing.map((r) => r.target), ...resources.map((r) => r.unit)];
    if (ctx.services && units.length > 0) await queryUnits(ctx.services, units);
  },

  async verify(ctx) {
    return ctx.services ? secondLook(ctx.services) : [];
  },
};
