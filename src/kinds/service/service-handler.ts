import { createActor } from 'xstate';
import { unitWatcherMachine } from '../../../machines/unit-watcher.js';
import type { ServiceResource } from '../../core/declaration/schema.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { checkedOf, type Checked, type ConvergeContext, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { REMOVE, type Change } from '../../engine/converge/changes.js';
import { exists, isRunning, isStarting, type UnitAction, type UnitState } from '../../machine/services/manager.js';
import { queryUnits, serviceApply, SERVICE_SHAPE, type ServiceApply, type ServiceRuntime } from './runtime.js';
import { lookAt, secondLook } from './verify.js';
import { gateOf, lockSaid, restartDue, type Gate, type Waiting } from '../../engine/inhibit/defer.js';

/** The state of a unit: from the plan's one batched read, or read again once the apply has changed things. */
async function stateOf(runtime: ServiceApply, unit: string, fresh: boolean): Promise<UnitState> {
  const known = runtime.states.get(unit);
  if (known && !fresh) return known;
  const state = (await queryUnits(runtime, [unit])).get(unit);
  if (!state) throw new Error(`the service manager said nothing of ${unit}`);
  return state;
}

/** A changed file under a unit directory needs one daemon-reload, before any unit is acted on. */
async function reloadIfUnitFilesChanged(ctx: ConvergeContext, runtime: ServiceApply): Promise<void> {
  if (runtime.daemonReloaded) return;
  const dirs = runtime.manager.unitDirectories;
  if (!ctx.changed.paths.some((p) => dirs.some((d) => p.startsWith(`${d}/`)))) return;
  await runtime.manager.daemonReload();
  runtime.daemonReloaded = true;
  // What was read before the reload may be stale (a unit just installed was not-found).
  runtime.states.clear();
}

interface Wanted {
  action?: UnitAction;
  /** Why the action: the resources named in restartOn that this apply changed (or an earlier one, its restart held off). */
  because?: string[];
  enable?: boolean;
  /** Whether the restart (or reload) may go now, as the service's lock says. */
  gate?: Gate;
}

function decide(resource: ServiceResource, state: UnitState, ctx: ConvergeContext): Wanted {
  const wanted: Wanted = {};
  const up = isRunning(state) || isStarting(state);
  if (resource.state === 'running') {
    const waiting = ctx.store.state.records[resource.id]?.deferred;
    const changed = restartDue(resource.restartOn, ctx.changed, waiting);
    if (!up) wanted.action = 'start';
    else if (changed.length > 0) {
      wanted.action = resource.reload ? 'reload' : 'restart';
      wanted.because = changed;
      wanted.gate = gateOf(resource, waiting, ctx.locks, ctx.now(), changed);
    }
  } else if (up) wanted.action = 'stop';
  if (resource.enabled !== undefined) {
    const enabledNow = state.unitFileState === 'enabled' || state.unitFileState === 'enabled-runtime';
    const fixed = ['static', 'indirect', 'generated', 'transient', 'alias'].includes(state.unitFileState);
    if (!fixed && resource.enabled !== enabledNow) wanted.enable = resource.enabled;
  }
  return wanted;
}

function changesOf(w: Wanted): Change[] {
  const changes: Change[] = [];
  if (w.action === 'restart' || w.action === 'reload') changes.push({ kind: w.action, because: w.because ?? [] });
  else if (w.action) changes.push({ kind: w.action });
  if (w.enable !== undefined) changes.push({ kind: w.enable ? 'enable' : 'disable' });
  return changes;
}

/** A service's step: an update when something changes, none otherwise; what its lock did said beside it. */
const stepFor = (resource: ServiceResource, changes: Change[], more?: Omit<Checked, 'step' | 'verb'>, gate?: Gate): Checked =>
  checkedOf(resource, resource.unit, changes.length > 0 ? 'update' : 'none', changes, { ...more, ...lockSaid(gate?.note) });

/** A restart held off, kept on the record; a record that kept one no longer due is made again without it. */
function heldOff(resource: ServiceResource, ctx: ConvergeContext, w: Wanted): Omit<Checked, 'step' | 'verb'> {
  const record = ctx.store.state.records[resource.id];
  if (record?.deferred === undefined || w.gate !== undefined) return {};
  const { deferred: _, ...rest } = record;
  return { remember: rest };
}

/**
 * The service handler over the host's way to its service manager: the manager is chosen when an apply
 * first has services to converge or remove (an apply without services never asks); each apply's unit
 * states, watchers and second look are its own, kept by its context.
 */
export function serviceHandler(host: ServiceRuntime): ResourceHandler<ServiceResource> {
  const applies = new WeakMap<ConvergeContext, ServiceApply>();
  const runtimeOf = (ctx: ConvergeContext): ServiceApply => {
    const runtime = applies.get(ctx);
    if (!runtime) throw new Error('no service manager on this machine: declaring services needs systemd or OpenRC');
    return runtime;
  };
  return {
    ...SERVICE_SHAPE,
    converge: (resource, ctx, apply) => converge(resource, ctx, apply, runtimeOf(ctx)),
    remove: (record, ctx, apply) => remove(record, ctx, apply, runtimeOf(ctx)),
    /** The manager, chosen once; then every unit the apply needs (declared and removed), in one batched read. */
    async prepare(resources, removing, ctx) {
      const choice = await host.manager();
      if (!choice.manager) return `services are declared or recorded, but ${choice.reason}`;
      const runtime = serviceApply(choice.manager, host.clock, host.pauseMs);
      applies.set(ctx, runtime);
      const units = [...removing.map((r) => r.target), ...resources.map((r) => r.unit)];
      if (units.length > 0) await queryUnits(runtime, units);
      return undefined;
    },
    async verify(ctx) {
      const runtime = applies.get(ctx);
      if (!runtime) return undefined;
      const failures = await secondLook(runtime);
      host.onLeft?.(new Map(runtime.states));
      const seen = runtime.verified;
      return { failures, ...(seen ? { said: [`second look at ${seen.units.join(', ')} after a pause of ${seen.pausedMs} ms (verifying took ${seen.tookMs} ms)`] } : {}) };
    },
  };
}

async function converge(resource: ServiceResource, ctx: ConvergeContext, apply: boolean, runtime: ServiceApply): Promise<Checked> {
  const unit = resource.unit;
  const record = (deferred?: Waiting) => ctx.store.record({ id: resource.id, type: 'service', target: unit, origin: ctx.origin, created: true, ...(deferred ? { deferred } : {}), appliedAt: ctx.now() });
  if (!apply) {
    const state = await stateOf(runtime, unit, false);
    if (!exists(state)) {
      // The plan cannot know whether this apply installs the unit: it says so; the apply decides.
      const w: Wanted = resource.state === 'running' ? { action: 'start' } : {};
      if (resource.enabled) w.enable = true;
      const changes = changesOf(w);
      return stepFor(resource, changes.length ? changes : [{ kind: 'check' }], { detail: `${unit} is not loaded yet (LoadState=not-found)` });
    }
    const w = decide(resource, state, ctx);
    return stepFor(resource, changesOf(w), heldOff(resource, ctx, w), w.gate);
  }

  await reloadIfUnitFilesChanged(ctx, runtime);
  const state = await stateOf(runtime, unit, false);
  if (!exists(state)) {
    throw new Error(`${unit} does not exist (LoadState=${state.loadState}): it cannot be ${resource.state === 'running' ? 'started' : 'stopped'}; a unit that does not exist is not a stopped one`);
  }
  const w = decide(resource, state, ctx);
  if (w.action === 'stop') await runtime.manager.act(unit, 'stop');
  if (w.enable !== undefined) await runtime.manager.setEnabled(unit, w.enable);
  // Every other change is made; the restart waits for the lock, kept on the record.
  if (w.gate?.go === false) {
    record(w.gate.waiting);
    return stepFor(resource, changesOf(w), {}, w.gate);
  }
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
  return stepFor(resource, changesOf(w), {}, w.gate);
}

async function remove(record: ResourceRecord, ctx: ConvergeContext, apply: boolean, runtime: ServiceApply): Promise<Checked> {
  const state = await stateOf(runtime, record.target, apply);
  if (!exists(state)) {
    // Uninstalled since: removing what is already gone succeeds.
    if (apply) ctx.store.forget(record.id);
    return checkedOf(record, record.target, 'remove', [REMOVE], { detail: `${record.target} is no longer installed; nothing to stop` });
  }
  const changes: Change[] = [REMOVE];
  const up = isRunning(state) || isStarting(state);
  const enabled = state.unitFileState === 'enabled';
  if (up) changes.push({ kind: 'stop' });
  if (enabled) changes.push({ kind: 'disable' });
  if (apply) {
    if (up) await runtime.manager.act(record.target, 'stop');
    if (enabled) await runtime.manager.setEnabled(record.target, false);
    ctx.store.forget(record.id);
  }
  return checkedOf(record, record.target, 'remove', changes);
}
