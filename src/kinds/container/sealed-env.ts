import type { ContainerResource } from '../../core/declaration/schema.js';
import { describeOpenProblem, isSealed, type Sealing } from '../../core/declaration/sealed.js';

/** A container with its sealed values opened (what the engine is given), and with them digested (what its labels hash). */
export interface OpenedEnv {
  plain: ContainerResource;
  digested: ContainerResource;
}

/**
 * Opens the sealed values of a container's env, at check and apply time only: the labels hash each one's
 * keyed digest (the host's own key), never the value; a value that does not open is the resource's
 * problem, named by variable, and nothing is touched.
 */
export function openEnv(r: ContainerResource, sealing: Sealing | undefined): OpenedEnv | string {
  const sealed = Object.entries(r.env ?? {}).filter(([, v]) => isSealed(v));
  if (sealed.length === 0) return { plain: r, digested: r };
  if (!sealing) return `env ${sealed[0]![0]} is sealed, but this host has no curve key to open it`;
  const plain: Record<string, string> = {};
  const digested: Record<string, string> = {};
  for (const [name, value] of Object.entries(r.env ?? {})) {
    if (!isSealed(value)) {
      plain[name] = digested[name] = value;
      continue;
    }
    const opened = sealing.open(value);
    if (!Buffer.isBuffer(opened)) return `env ${name}: ${describeOpenProblem(opened)}`;
    plain[name] = opened.toString('utf8');
    digested[name] = sealing.digest(opened);
  }
  return { plain: { ...r, env: plain }, digested: { ...r, env: digested } };
}
