import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { receiveDeclaration, type Received } from '../../declaration/load.js';
import { openBundle } from '../../declaration/bundle.js';
import { applyDeclaration } from '../../apply/apply.js';
import { formatPlan } from '../../report/report.js';
import { refused } from '../../system/errors.js';
import type { CommandContext } from '../context.js';
import { KEPT_DECLARATION, withHost, type OpenHost } from '../host.js';
import { finish } from './apply.js';
import { CARRIED_BUNDLE } from './genesis.js';

/** What a reconcile applies: what the mesh last said, or before it has spoken the bundle genesis applied. */
export async function reconcileSource(host: OpenHost): Promise<{ received: Received; said: string[]; mayChangeMode: boolean }> {
  const { stateDir } = host.paths;
  const pinnedKey = host.config.publicKey;
  if (host.hasKeptDeclaration) {
    if (!pinnedKey) throw refused('a kept declaration exists but no control-plane key is pinned in the configuration; nothing was touched');
    // Its signature is checked again: the file could have been changed since the link kept it.
    const received = await receiveDeclaration(readFileSync(join(stateDir, KEPT_DECLARATION)), {
      source: 'the kept declaration',
      pinnedKey,
      node: host.config.node,
      requireSignature: true,
    });
    const recorded = host.store.state.mode;
    const said = recorded !== undefined && recorded !== received.declaration.mode
      ? [`the recorded mode was ${recorded}, the kept signed declaration says ${received.declaration.mode}: the kept declaration wins (repaired)`]
      : [];
    return { received, said, mayChangeMode: true };
  }
  const consumed = host.store.state.genesisDigest;
  if (consumed === undefined) throw refused('this machine is not enrolled and the mesh has not spoken: nothing to reconcile (mesh-host genesis BUNDLE enrols it)');
  const bundlePath = join(stateDir, CARRIED_BUNDLE);
  if (!existsSync(bundlePath)) throw refused(`genesis applied ${consumed}, but the carried bundle ${bundlePath} is gone; nothing was touched`);
  const { received } = await openBundle(readFileSync(bundlePath), bundlePath);
  if (received.digest !== consumed) {
    throw refused(`the carried bundle's declaration is ${received.digest}, but genesis applied ${consumed}: only what genesis applied is reconciled; nothing was touched`);
  }
  return { received, said: [], mayChangeMode: false };
}

/** `mesh-host reconcile [--dry-run]`: applies what the mesh last said, never the bundle once it has spoken. */
export async function reconcileCommand(ctx: CommandContext): Promise<number> {
  return withHost(ctx, 'reconcile', async (host) => {
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
