import { lifecycleMachine } from '../../../machines/lifecycle.js';
import { chartOf, toDot, toMermaid } from '../../../machines/chart.js';
import { EXIT, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';

/** `mesh-host chart [--format mermaid|dot|json]`: the lifecycle machine, drawn from its definition. */
export async function chartCommand(ctx: CommandContext): Promise<number> {
  const format = stringFlag(ctx.flags, 'format') ?? (ctx.json ? 'json' : 'mermaid');
  const chart = chartOf(lifecycleMachine);
  if (format === 'json') ctx.print(JSON.stringify(chart, null, 2));
  else if (format === 'mermaid') ctx.print(toMermaid(chart));
  else if (format === 'dot') ctx.print(toDot(chart));
  else throw usageError(`--format must be mermaid, dot or json (not '${format}')`);
  return EXIT.ok;
}
