import { applyDeclaration, type HostEnv } from '../src/engine/apply/apply.js';
import { receiveDeclaration } from '../src/core/declaration/load.js';
import type { Declaration, Resource } from '../src/core/declaration/schema.js';
import type { Report } from '../src/engine/report/report.js';

/**
 * The apply path in-process, as `mesh-host apply FILE` runs it, each call a new sequence: what the
 * benchmarks time. A run that does not converge stops the benchmark, with what it said.
 */
export function localApplier(env: HostEnv): (resources: Resource[]) => Promise<Report> {
  let sequence = 0;
  return async (resources) => {
    const declaration: Declaration = { version: 1, node: env.node, mode: 'converged', sequence: ++sequence, resources };
    const received = await receiveDeclaration(Buffer.from(JSON.stringify(declaration)), { source: 'bench' });
    const r = await applyDeclaration(env, { received, origin: 'local', trigger: 'apply', dryRun: false, mayChangeMode: false });
    if (r.kind !== 'applied' || r.report.outcome !== 'converged') throw new Error(JSON.stringify(r).slice(0, 600));
    return r.report;
  };
}
