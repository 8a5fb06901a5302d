import { fleetHealthy, fleetRows } from '../fleet/fleet.js';
import { formatFleet } from '../fleet/fleet-format.js';
import { readFleet } from '../fleet/fleet-read.js';
import { resolveTargets } from '../fleet/targets.js';
import { fleetReportVerifier, readEnrolments } from '../fleet/trust.js';
import { EXIT } from '../../core/system/errors.js';
import { output, type CommandContext } from '../../cli/context.js';
import { connectControl } from '../../cli/link-flags.js';
import { targetFlags } from './target-flags.js';
import { openTrustBucket, readTrustVersions } from '../../link/trust-bucket.js';

/** The mesh's newest trust root version, read only; undefined when the mesh holds none. */
async function meshTrustVersion(nc: Parameters<typeof openTrustBucket>[0]): Promise<number | undefined> {
  const kv = await openTrustBucket(nc);
  return kv ? (await readTrustVersions(kv)).length || undefined : undefined;
}

/**
 * `meshctl status [--select k=v,…]` without a node: the fleet, one line a node the mesh knows, worst
 * first (with --select, the nodes whose labels match; none matching is refused). Exit 1 when any node
 * shown failed, is silent or has not reported yet, 0 otherwise: a monitoring check can run it.
 */
export async function fleetCommand(ctx: CommandContext): Promise<number> {
  const choice = targetFlags(ctx);
  const nc = await connectControl(ctx);
  try {
    const enrolments = readEnrolments(nc);
    // Read-only: a stream the control side has not created yet reads as empty.
    const [read, trustVersion] = await Promise.all([readFleet(nc, { verifyReport: fleetReportVerifier(enrolments) }), meshTrustVersion(nc)]);
    const enrolled = (await enrolments).enrolled();
    const labels = new Map(enrolled.map((e) => [e.node, e.enrolment.labels ?? {}]));
    const chosen = choice ? new Set(resolveTargets(choice, enrolled, 'nothing to show')) : undefined;
    const rows = fleetRows({ ...read, enrolled: enrolled.map((e) => e.node), removed: (await enrolments).removed(), nowMs: ctx.clock.now().getTime(), ...(trustVersion ? { trustVersion } : {}) })
      .filter((r) => !chosen || chosen.has(r.node))
      .map((r) => ({ ...r, labels: labels.get(r.node) ?? {} }));
    output(ctx, { nodes: rows, healthy: fleetHealthy(rows) }, () => formatFleet(rows));
    return fleetHealthy(rows) ? EXIT.ok : EXIT.failed;
  } finally {
    await nc.close();
  }
}
