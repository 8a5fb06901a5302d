import { applyDeclaration } from '../../engine/apply/apply.js';
import { reconcileSource } from '../env/kept-declaration.js';
import { formatPlan } from '../../engine/report/report.js';
import type { CommandContext } from '../../cli/context.js';
import { withHost } from './with-host.js';
import { finish } from './apply-command.js';
import { refuseWhilePaused } from './pause-command.js';

/** `mesh-host reconcile [--dry-run]`: applies what the mesh last said, never the bundle once it has spoken. */
export async function reconcileCommand(ctx: CommandContext): Promise<number> {
  return withHost(ctx, 'reconcile', async (host) => {
    refuseWhilePaused(host.store.state, ctx.clock, ctx.flags['dry-run'] === true);
    const { received, said, mayChangeMode } = await reconcileSource(host);
    const result = await applyDeclaration(host.env, {
      received,
      origin: 'mesh',
      trigger: 'reconcile',
      dryRun: ctx.flags['dry-run'] === true,
      mayChangeMode,
      said,
      diff: ctx.flags.diff === true,
      onPlan: (plan) => {
        if (!ctx.json) ctx.print(formatPlan(plan));
      },
    });
    return finish(ctx, result);
  });
}
