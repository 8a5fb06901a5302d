import { fleetHealthy, fleetRows } from '../../fleet/fleet.js';
import { formatFleet } from '../../fleet/format.js';
import { readFleet } from '../../fleet/read.js';
import { fleetReportVerifier } from '../../fleet/trust.js';
import { EXIT } from '../../system/errors.js';
import { output, type CommandContext } from '../context.js';
import { connectControl } from '../link-flags.js';

/**
 * `meshctl status` without a node: the fleet, one line a node the mesh knows, worst first. Exit 1
 * when any node failed, is silent or has not reported yet, 0 otherwise: a monitoring check can run it.
 */
export async function fleetCommand(ctx: CommandContext): Promise<number> {
  const nc = await connectControl(ctx);
  try {
    // Read-only: a stream the control side has not created yet reads as empty.
    const read = await readFleet(nc, { verifyReport: fleetReportVerifier(nc) });
    const rows = fleetRows({ ...read, nowMs: ctx.clock.now().getTime() });
    output(ctx, { nodes: rows, healthy: fleetHealthy(rows) }, () => formatFleet(rows));
    return fleetHealthy(rows) ? EXIT.ok : EXIT.failed;
  } finally {
    await nc.close();
  }
}
