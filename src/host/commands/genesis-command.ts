import { readDeclarationFile } from '../../core/declaration/load.js';
import { genesis } from '../genesis/genesis.js';
import { formatPlan } from '../../engine/report/report.js';
import { usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { hostPaths } from './with-host.js';
import { finish } from './apply-command.js';

/**
 * `mesh-host genesis BUNDLE --mode adopted|converged [--dry-run]`: enrols this machine through the one
 * genesis path (the daemon given `--bundle` takes the same one).
 */
export async function genesisCommand(ctx: CommandContext): Promise<number> {
  const file = ctx.args[0]!;
  const mode = stringFlag(ctx.flags, 'mode');
  if (mode !== 'adopted' && mode !== 'converged') throw usageError("'genesis' needs --mode adopted or --mode converged");
  const result = await genesis(hostPaths(ctx), ctx, {
    bytes: readDeclarationFile(file),
    source: file,
    mode,
    dryRun: ctx.flags['dry-run'] === true,
    diff: ctx.flags.diff === true,
    onPlan: (plan) => {
      if (!ctx.json) ctx.print(formatPlan(plan));
    },
  });
  return finish(ctx, result);
}
