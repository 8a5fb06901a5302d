import type { NatsConnection } from '@nats-io/transport-node';
import { describeSetUp, ensureWire, type HistoryRetention } from '../../link/control.js';
import { MESH_KEEP_HISTORY } from './mesh-defaults.js';
import { usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { connectControl, listFlag } from '../../cli/link-flags.js';

/** `--NAME N`: a whole number at least `min`, or undefined when not given. */
export function countFlag(ctx: CommandContext, name: string, min: number): number | undefined {
  const text = stringFlag(ctx.flags, name);
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < min) throw usageError(`--${name} ${text}: a whole number of at least ${min}`);
  return n;
}

/** A flag of ports (`--port 4222,4223`), each checked. */
export function portsFlag(ctx: CommandContext, name: string): number[] {
  return listFlag(ctx.flags, name).map((text) => {
    const n = Number(text);
    if (!/^\d+$/.test(text) || n < 1 || n > 65535) throw usageError(`--${name} ${text}: a port (1-65535)`);
    return n;
  });
}

/** `forever`, or a duration (90d, 12h), in ms (0 for ever); undefined when it is neither. */
export function keepHistoryMs(text: string): number | undefined {
  if (text === 'forever') return 0;
  const m = /^(\d+)(m|h|d|w)$/.exec(text);
  if (!m || Number(m[1]) === 0) return undefined;
  return Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 }[m[2] as 'm' | 'h' | 'd' | 'w'];
}

/** `--keep-history` sets the history's retention; the mesh directory's says what a new history keeps. */
function historyRetention(ctx: CommandContext): HistoryRetention | undefined {
  const given = stringFlag(ctx.flags, 'keep-history');
  const text = given ?? stringFlag(ctx.flags, MESH_KEEP_HISTORY);
  if (text === undefined) return undefined;
  const keepMs = keepHistoryMs(text);
  if (keepMs === undefined) throw usageError(`--keep-history ${text}: how long the mesh keeps each declaration, as 90d, 12w, 36h or forever`);
  return { keepMs, set: given !== undefined };
}

/** Connects, creates the mesh's records when missing (replicas sized to the cluster), and says what it chose. */
export async function connectWire(ctx: CommandContext): Promise<NatsConnection> {
  const nc = await connectControl(ctx);
  try {
    const replicas = countFlag(ctx, 'replicas', 1);
    const history = historyRetention(ctx);
    const setUp = await ensureWire(nc, { ...(replicas === undefined ? {} : { replicas }), ...(history ? { history } : {}) });
    for (const line of describeSetUp(setUp)) ctx.log.warn(line);
    return nc;
  } catch (err) {
    await nc.close();
    throw err;
  }
}
