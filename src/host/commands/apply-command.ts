import { readDeclarationFile, receiveDeclaration } from '../../core/declaration/load.js';
import { loadConfig } from '../../core/config/config.js';
import { HeldTrust } from '../env/held-trust.js';
import { applyDeclaration, type ApplyResult } from '../../engine/apply/apply.js';
import { formatPlan, formatReport } from '../../engine/report/report.js';
import { EXIT, refused } from '../../core/system/errors.js';
import type { CommandContext } from '../../cli/context.js';
import { hostPaths, withHost } from './with-host.js';
import { refuseWhilePaused } from './pause-command.js';

/** `mesh-host apply FILE [--dry-run]`: for a machine the mesh has not spoken to. */
export async function applyCommand(ctx: CommandContext): Promise<number> {
  const file = ctx.args[0]!;
  const dryRun = ctx.flags['dry-run'] === true;
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  // Everything about the declaration is checked before the machine is read or touched.
  const rule = new HeldTrust(paths.stateDir, config.publicKey).rule();
  const received = await receiveDeclaration(readDeclarationFile(file), { source: file, node: config.node, ...(rule ? { rule } : {}) });

  return withHost(ctx, 'apply', async (host) => {
    if (host.kept.exists()) {
      throw refused(`the mesh has spoken to this machine (${host.kept.path} exists): 'apply FILE' is only for a machine it has not; use 'mesh-host reconcile'`, [], 'state');
    }
    refuseWhilePaused(host.store.state, ctx.clock, dryRun);
    const result = await applyDeclaration(host.env, {
      received,
      origin: 'local',
      trigger: 'apply',
      dryRun,
      mayChangeMode: false,
      diff: ctx.flags.diff === true,
      onPlan: (plan) => {
        if (!ctx.json) ctx.print(formatPlan(plan));
      },
    });
    return finish(ctx, result);
  });
}

/** Prints a result (the plan, then the report) and turns it into the exit status. */
export function finish(ctx: CommandContext, result: ApplyResult): number {
  const detailed = ctx.flags['detailed-exitcodes'] === true;
  switch (result.kind) {
    case 'planned':
      if (ctx.json) ctx.print(JSON.stringify({ plan: result.plan }, null, 2));
      return detailed ? detailedExitCode({ changed: result.plan.steps.some((s) => s.changes.length > 0), failed: false }) : EXIT.ok;
    case 'applied':
    case 'silent':
      ctx.print(ctx.json ? JSON.stringify({ plan: result.plan, report: result.report }, null, 2) : formatReport(result.report));
      if (detailed) return detailedExitCode({ changed: result.report.steps.some((s) => s.status === 'done'), failed: result.report.outcome !== 'converged' });
      return result.report.outcome === 'converged' ? EXIT.ok : EXIT.failed;
    case 'refused':
      throw refused(result.reason, result.details, result.refusal, result.subjects);
  }
}

/**
 * `--detailed-exitcodes`, Puppet's convention, for scripts that must tell "nothing to do" from "did
 * something": 0 nothing changed, 2 changes applied (or planned, in a dry run), 4 failures, 6 both.
 * A refusal keeps its own status (3): nothing was touched.
 */
export function detailedExitCode(result: { changed: boolean; failed: boolean }): number {
  return (result.changed ? 2 : 0) + (result.failed ? 4 : 0);
}
