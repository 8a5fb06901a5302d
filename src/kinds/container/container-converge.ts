import type { ContainerResource } from '../../core/declaration/schema.js';
import { ORIGINAL_SUFFIX, PREPARED_SUFFIX } from './container-spec.js';
import { foundVerdict, HELD_REASON } from '../../engine/converge/ownership.js';
import { checkedOf, type Checked, type ConvergeContext } from '../../engine/converge/handler-types.js';
import { CREATE, HOLD, type Change } from '../../engine/converge/changes.js';
import type { OriginalContainer, ResourceRecord } from '../../core/store/state.js';
import type { Inspected, Listed } from './engine.js';
import { ensureImage, engineImage, imageAction } from './image.js';
import { failureOf, firstLookVerdict } from './look.js';
import { archivesOf, isUp, type ContainerEnv, type ContainerRun } from './container-run.js';
import { gateOf, lockSaid, restartDue, type Gate } from '../../engine/inhibit/defer.js';
import { openEnv } from './sealed-env.js';
import { createRequest, DEFAULT_STOP_TIMEOUT_S, digestsOf, fieldsThatDiffer, LABEL, specOf, type Spec } from './engine-request.js';

/**
 * What a check decided to do to one declared container; the apply carries out the same. `leftovers` are
 * the resource's other containers (a replacement's cut short before the one it replaced was removed).
 */
type Decision = (
  | { kind: 'none'; current: Listed }
  | { kind: 'start' | 'stop'; current: Listed }
  | { kind: 'restart'; current: Listed; because: string[] }
  | { kind: 'replace'; current: Listed; fields: string[] }
  | { kind: 'rename'; current: Listed; run?: 'start' | 'stop' }
  | { kind: 'create'; found?: { original: OriginalContainer; running: boolean } }
  | { kind: 'hold' }
) & { leftovers?: Listed[] };

/** A volume's host path inside the state directory would hand the host's own records to a container. */
export function volumeProblem(r: ContainerResource, stateDir: string): string | undefined {
  const inside = (r.volumes ?? []).map((v) => v.split(':')[0]!).find((host) => host === stateDir || host.startsWith(`${stateDir}/`));
  return inside ? `volume '${inside}' lies inside the state directory ${stateDir}` : undefined;
}

/**
 * Of the resource's containers, the one the declaration is converged from: the one under the declared
 * name, else a replacement made under its own name (its predecessor removed before it was renamed), else
 * the first the engine listed.
 */
function currentOf(owned: Listed[], name: string): Listed | undefined {
  return owned.find((c) => c.name === name) ?? owned.find((c) => c.name === `${name}${PREPARED_SUFFIX}`) ?? owned[0];
}

async function decide(r: ContainerResource, spec: Spec, env: ContainerEnv, run: ContainerRun, ctx: ConvergeContext): Promise<Decision> {
  const owned = run.owned.get(r.id) ?? [];
  const current = currentOf(owned, r.name);
  if (current) {
    const others = owned.filter((c) => c.id !== current.id);
    const leftovers = others.length > 0 ? { leftovers: others } : {};
    return { ...decideOn(current, r, spec, ctx), ...leftovers };
  }
  const found = await foundUnder(r.name, env, run);
  if (!found) return { kind: 'create' };
  if (foundVerdict(r, ctx) === 'hold') return { kind: 'hold' };
  return { kind: 'create', found: { original: { kind: 'container', id: found.id, name: r.name, aside: `${r.name}${ORIGINAL_SUFFIX}`, running: found.running }, running: found.running } };
}

/** The decision for the container there is: its spec, its name, whether it runs, whether a change asks a restart. */
function decideOn(current: Listed, r: ContainerResource, spec: Spec, ctx: ConvergeContext): Decision {
  const digests = digestsOf(spec);
  if (current.labels[LABEL.spec] !== digests.spec) return { kind: 'replace', current, fields: fieldsThatDiffer(current.labels[LABEL.fields], digests.fields) };
  const wanted = r.state === 'stopped' ? (isUp(current) ? 'stop' : undefined) : isUp(current) ? undefined : 'start';
  // The declared spec under another name: a replacement made, its predecessor gone, the rename not yet made.
  if (current.name !== r.name) return { kind: 'rename', current, ...(wanted ? { run: wanted } : {}) };
  if (wanted) return { kind: wanted, current };
  if (r.state === 'stopped') return { kind: 'none', current };
  const because = restartDue(r.restartOn, ctx.changed, ctx.store.state.records[r.id]?.deferred);
  return because.length > 0 ? { kind: 'restart', current, because } : { kind: 'none', current };
}

/**
 * A container under the declared name that the host did not make; or one set aside under the taken name
 * and not recorded (a take cut short between its rename and the store's save), which is the original.
 */
async function foundUnder(name: string, env: ContainerEnv, run: ContainerRun): Promise<Inspected | undefined> {
  for (const candidate of [name, `${name}${ORIGINAL_SUFFIX}`]) {
    const found = await run.engine.inspect(candidate);
    if (found && found.labels[LABEL.node] !== env.node) return found;
  }
  return undefined;
}

function changesOf(d: Decision, image: Change | undefined, r: ContainerResource): Change[] {
  const tidy = (d.leftovers ?? []).map((c): Change => ({ kind: 'remove-leftover', name: c.name }));
  return [...tidy, ...stepChangesOf(d, image, r)];
}

function stepChangesOf(d: Decision, image: Change | undefined, r: ContainerResource): Change[] {
  const bring = image ? [image] : [];
  const run: Change[] = r.state === 'running' ? [{ kind: 'start' }] : [];
  switch (d.kind) {
    case 'none':
      return [];
    case 'hold':
      return [HOLD];
    case 'start':
    case 'stop':
      return [{ kind: d.kind }];
    case 'restart':
      return [{ kind: 'restart', because: d.because }];
    case 'replace':
      return [...bring, { kind: 'replace', fields: d.fields }, ...run];
    case 'rename':
      return [{ kind: 'rename', from: d.current.name, to: r.name }, ...(d.run ? [{ kind: d.run }] : [])];
    case 'create':
      return [...(d.found ? [{ kind: 'take' as const, aside: d.found.original.aside }] : []), ...bring, CREATE, ...run];
  }
}

/** One function checks and, when asked to, applies: the plan is the check alone. */
export async function convergeContainer(r: ContainerResource, ctx: ConvergeContext, apply: boolean, env: ContainerEnv, run: ContainerRun): Promise<Checked> {
  const checked = (verb: Checked['verb'], changes: Change[], more?: Omit<Checked, 'step' | 'verb'>) => checkedOf(r, r.name, verb, changes, more);
  const problem = volumeProblem(r, env.stateDir);
  if (problem) return checked('none', [], { problem });
  const opened = openEnv(r, ctx.sealing);
  if (typeof opened === 'string') return checked('none', [], { problem: opened });
  const spec = specOf(opened.digested);
  const d = await decide(r, spec, env, run, ctx);
  const image = d.kind === 'create' || d.kind === 'replace' ? await imageAction(run.engine, r.image) : undefined;
  const changes = changesOf(d, image, r);
  if (d.kind === 'hold') return checked('hold', changes, { detail: HELD_REASON });
  if (d.kind === 'none' && !d.leftovers) {
    const current = d.current;
    const record = ctx.store.state.records[r.id];
    // Made by an apply cut short before its save, or recorded otherwise (or keeping a wait no longer due): the apply records it as it is.
    const fresh = record?.type === 'container' && record.container?.id === current.id && record.container.spec === current.labels[LABEL.spec] && record.deferred === undefined;
    return fresh ? checked('none', []) : checked('none', [], { remember: recordOf(r, ctx, current.id, current.labels[LABEL.spec]!, record) });
  }
  const gate = gateFor(d, r, ctx);
  // Every other step goes on; this one waits for the lock, kept on the record.
  if (gate?.go === false && (d.kind === 'replace' || d.kind === 'restart')) {
    if (apply) ctx.store.record({ ...recordOf(r, ctx, d.current.id, d.current.labels[LABEL.spec]!, ctx.store.state.records[r.id]), deferred: gate.waiting });
    return checked('update', changes, lockSaid(gate.note));
  }
  if (apply) await carryOut(d, opened.plain, spec, ctx, env, run);
  const verb = d.kind === 'create' ? (d.found ? 'take' : 'create') : 'update';
  return checked(verb, changes, d.kind === 'create' && d.found ? { detail: 'found here; taken over, the original kept aside' } : lockSaid(gate?.note));
}

/** Whether a replacement or a restart may go now, as the container's lock says; no other step asks it. */
function gateFor(d: Decision, r: ContainerResource, ctx: ConvergeContext): Gate | undefined {
  if (d.kind !== 'replace' && d.kind !== 'restart') return undefined;
  return gateOf(r, ctx.store.state.records[r.id]?.deferred, ctx.locks, ctx.now(), d.kind === 'restart' ? d.because : undefined);
}

function recordOf(r: ContainerResource, ctx: ConvergeContext, id: string, spec: string, before: ResourceRecord | undefined, original?: OriginalContainer): ResourceRecord {
  const kept = original ?? before?.container?.original;
  return {
    id: r.id,
    type: 'container',
    target: r.name,
    origin: ctx.origin,
    created: kept === undefined,
    container: { id, spec, ...(r.stopTimeout !== undefined ? { stopTimeout: r.stopTimeout } : {}), ...(kept ? { original: kept } : {}) },
    appliedAt: ctx.now(),
  };
}

async function carryOut(d: Exclude<Decision, { kind: 'hold' }>, r: ContainerResource, spec: Spec, ctx: ConvergeContext, env: ContainerEnv, run: ContainerRun): Promise<void> {
  const { engine } = run;
  const timeout = r.stopTimeout ?? DEFAULT_STOP_TIMEOUT_S;
  const before = ctx.store.state.records[r.id];
  for (const leftover of d.leftovers ?? []) await engine.remove(leftover.id);
  if (d.kind === 'none') return void ctx.store.record(recordOf(r, ctx, d.current.id, d.current.labels[LABEL.spec]!, before));
  if (d.kind === 'rename') return renameMade(d, r, ctx, env, run);
  if (d.kind === 'stop') {
    await engine.stop(d.current.id, timeout);
    // A restart that waited is no longer due once the container is declared stopped.
    if (before?.deferred) ctx.store.record(recordOf(r, ctx, d.current.id, d.current.labels[LABEL.spec]!, before));
    return;
  }
  if (d.kind === 'start' || d.kind === 'restart') {
    if (d.kind === 'start') await engine.start(d.current.id);
    else await engine.restart(d.current.id, timeout);
    ctx.store.record(recordOf(r, ctx, d.current.id, d.current.labels[LABEL.spec]!, before));
    return watch(r, d.current.id, d.kind, env, run);
  }
  let original: OriginalContainer | undefined;
  if (d.kind === 'create' && d.found) {
    original = d.found.original;
    // Set aside first, then stopped: a take cut short between the two is found again by the aside name.
    const aside = await engine.inspect(original.aside);
    if (!aside) await engine.rename(original.id, original.aside);
    await engine.stop(original.id, timeout);
    ctx.store.record({ ...recordOf(r, ctx, '', '', before, original) });
  }
  await ensureImage(engine, r.image, archivesOf(env));
  const request = createRequest(env.node, r, spec, engineImage(r.image), specOf(r).env);
  let id: string;
  if (d.kind === 'replace') {
    // The replacement is made under another name while the container it replaces still runs: a create the
    // engine refuses, or a power cut before the swap, leaves the old one; a cut after it, the new one.
    // Each change is made durable before the next: the engine's own storage survives a cut between them.
    id = await engine.create({ ...request, name: `${r.name}${PREPARED_SUFFIX}` });
    await run.durable();
    await engine.stop(d.current.id, timeout);
    await engine.remove(d.current.id);
    await run.durable();
    await engine.rename(id, r.name);
  } else {
    id = await engine.create(request);
  }
  await run.durable();
  ctx.store.record(recordOf(r, ctx, id, request.labels[LABEL.spec]!, before, original));
  if (r.state === 'running') {
    await engine.start(id);
    await watch(r, id, d.kind === 'replace' ? 'replacement' : 'start', env, run);
  }
}

/** A replacement made before a cut, its predecessor gone: given the declared name, then run as declared. */
async function renameMade(d: Extract<Decision, { kind: 'rename' }>, r: ContainerResource, ctx: ConvergeContext, env: ContainerEnv, run: ContainerRun): Promise<void> {
  await run.engine.rename(d.current.id, r.name);
  await run.durable();
  ctx.store.record(recordOf(r, ctx, d.current.id, d.current.labels[LABEL.spec]!, ctx.store.state.records[r.id]));
  if (d.run === 'stop') await run.engine.stop(d.current.id, r.stopTimeout ?? DEFAULT_STOP_TIMEOUT_S);
  if (d.run !== 'start') return;
  await run.engine.start(d.current.id);
  await watch(r, d.current.id, 'start', env, run);
}

/** The first look, right after the action; the second comes once every step is done (verify). */
async function watch(r: ContainerResource, id: string, action: string, env: ContainerEnv, run: ContainerRun): Promise<void> {
  const actedAt = env.clock.monotonic();
  const first = await run.engine.inspect(id);
  const secrets = (r.sensitiveEnv ?? []).map((name) => r.env?.[name]).filter((v): v is string => typeof v === 'string');
  const watched = { resource: r.id, id, name: r.name, action, actedAt, secrets };
  if (!first) throw new Error(`container ${r.name} is gone right after its ${action}`);
  const why = firstLookVerdict(first);
  if (why) throw new Error(await failureOf(run.engine, watched, why, env.clock.monotonic() - actedAt, first));
  run.watched.push({ ...watched, first });
}
