import type { ContainerResource } from '../../core/declaration/schema.js';
import { checkedOf, type Checked, type ConvergeContext, type ResourceHandler } from '../../engine/converge/handler-types.js';
import { REMOVE, type Change } from '../../engine/converge/changes.js';
import type { ResourceRecord } from '../../core/store/state.js';
import { convergeContainer } from './container-converge.js';
import { secondLook } from './look.js';
import { engineDurable, isUp, listOwned, type ContainerEnv, type ContainerRun } from './container-run.js';
import { CONTAINER_SHAPE, DEFAULT_STOP_TIMEOUT_S } from './engine-request.js';
import { engineStatus } from './engine.js';

/**
 * Containers through the engine's API: one listing by label per apply (the no-op asks nothing more),
 * each declared container checked and applied by one function, the second look after every step.
 * Each apply's listing and watched containers are its own, kept by its context.
 */
export function containerHandler(env: ContainerEnv): ResourceHandler<ContainerResource> {
  const runs = new WeakMap<ConvergeContext, ContainerRun>();
  const runOf = (ctx: ConvergeContext): ContainerRun => {
    const run = runs.get(ctx);
    if (!run) throw new Error('no container engine was reached for this apply');
    return run;
  };
  return {
    ...CONTAINER_SHAPE,
    converge: (resource, ctx, apply) => convergeContainer(resource, ctx, apply, env, runOf(ctx)),
    remove: (record, ctx, apply) => removeContainer(record, ctx, apply, runOf(ctx)),
    /** The engine, reached once; then every container this host made, in one listing by label. */
    async prepare(_resources, _removing, ctx) {
      try {
        const engine = await env.engine();
        runs.set(ctx, { engine, owned: await listOwned(engine, env.node), watched: [], durable: engineDurable(engine, env) });
        return undefined;
      } catch (err) {
        return engineRefusal(err);
      }
    },
    async verify(ctx) {
      const run = runs.get(ctx);
      if (!run || run.watched.length === 0) return undefined;
      const watched = run.watched;
      run.watched = [];
      const { failures, said } = await secondLook(run.engine, env.clock, env.pauseMs, watched);
      return { failures, said: [`second look at container${watched.length === 1 ? '' : 's'} ${watched.map((w) => w.name).join(', ')} after a pause of ${env.pauseMs} ms`, ...said] };
    },
  };
}

/**
 * Why no container is converged when the apply's one listing fails. An engine that answered with an
 * error (its own storage unreadable, say, after a power cut inside one of its writes) is told apart from
 * one that cannot be reached, so that the operator looks at the engine's state rather than its socket.
 */
function engineRefusal(err: unknown): string {
  return `containers are declared or recorded, but the container engine ${engineStatus(err) !== undefined ? 'answered with an error' : 'cannot be reached'}: ${(err as Error).message}`;
}

/**
 * A container the declaration lets go of: the host's own (found by its label) stopped and removed, and
 * the original it took given its name back, started again if it was running when taken.
 */
async function removeContainer(record: ResourceRecord, ctx: ConvergeContext, apply: boolean, run: ContainerRun): Promise<Checked> {
  const mine = run.owned.get(record.id) ?? [];
  const original = record.container?.original;
  const changes: Change[] = [...(mine.some(isUp) ? [{ kind: 'stop' as const }] : []), ...(mine.length > 0 ? [REMOVE] : []), ...(original ? [{ kind: 'give-back' as const, what: 'container' as const, name: original.name, start: original.running }] : [])];
  if (apply) {
    for (const c of mine) {
      await run.engine.stop(c.id, record.container?.stopTimeout ?? DEFAULT_STOP_TIMEOUT_S);
      await run.engine.remove(c.id);
    }
    if (original) {
      const aside = await run.engine.inspect(original.id);
      if (aside) {
        if (aside.name !== original.name) await run.engine.rename(original.id, original.name);
        if (original.running) await run.engine.start(original.id);
      }
    }
    ctx.store.forget(record.id);
  }
  const detail = mine.length === 0 ? `${record.target} was already gone` : undefined;
  return checkedOf(record, record.target, 'remove', changes.length > 0 ? changes : [REMOVE], detail ? { detail } : {});
}
