import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { loadConfig } from '../../config/config.js';
import { applyDeclaration, type ApplyResult } from '../../apply/apply.js';
import { formatPlan, formatReport } from '../../report/report.js';
import { EXIT, refused } from '../../system/errors.js';
import type { CommandContext } from '../context.js';
import { hostPaths, KEPT_DECLARATION, withHost } from '../host.js';
import { unsupportedProblem } from '../supported.js';

/** `mesh-host apply FILE [--dry-run]`: for a machine the mesh has not spoken to. */
export async function applyCommand(ctx: CommandContext): Promise<number> {
  const file = ctx.args[0]!;
  const dryRun = ctx.flags['dry-run'] === true;
  const paths = hostPaths(ctx);
  const { config } = loadConfig(paths.configPath);
  // Everything about the declaration is checked before the machine is read or touched.
  const received = await receiveDeclaration(readDeclarationFile(file), { source: file, node: config.node, ...(config.publicKey ? { pinnedKey: config.publicKey } : {}) });
  const unsupported = unsupportedProblem(received.declaration);
  if (unsupported) throw refused(`${file}: ${unsupported}; nothing was touched`);

  return withHost(ctx, 'apply', async (host) => {
    if (host.hasKeptDeclaration) {
      throw refused(`the mesh has spoken to this machine (${host.paths.stateDir}/${KEPT_DECLARATION} exists): 'apply FILE' is only for a machine it has not; use 'mesh-host reconcile'`);
    }
    const result = await applyDeclaration(host.env, {
      received,
      origin: 'local',
      trigger: 'apply',
      dryRun,
      mayChangeMode: false,
      onPlan: (plan) => {
        if (!ctx.json) ctx.print(formatPlan(plan));
      },
    });
    return finish(ctx, result);
  });
}

/** Prints a result as §10 shapes it and turns it into the exit status. */
export function finish(ctx: CommandContext, result: ApplyResult): number {
  switch (result.kind) {
    case 'planned':
      if (ctx.json) ctx.print(JSON.stringify({ plan: result.plan }, null, 2));
      return EXIT.ok;
    case 'applied':
    case 'silent':
      ctx.print(ctx.json ? JSON.stringify({ plan: result.plan, report: result.report }, null, 2) : formatReport(result.report));
      return result.report.outcome === 'converged' ? EXIT.ok : EXIT.failed;
    case 'refused':
      throw refused(result.reason, result.details);
  }
}
