import { targetChoice, type TargetChoice } from '../fleet/targets.js';
import type { CommandContext } from '../../cli/context.js';
import { stringFlag } from '../../cli/context.js';
import { listFlag } from '../../cli/link-flags.js';

/** `--nodes a,b` | `--select k=v` | `--all` as the command line gave them (undefined when none was). */
export function targetFlags(ctx: CommandContext): TargetChoice | undefined {
  const select = stringFlag(ctx.flags, 'select');
  return targetChoice({ nodes: listFlag(ctx.flags, 'nodes'), ...(select === undefined ? {} : { select }), all: ctx.flags.all === true });
}
