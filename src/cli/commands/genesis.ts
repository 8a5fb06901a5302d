import { join } from 'node:path';
import { readDeclarationFile } from '../../declaration/load.js';
import { openBundle, type GenesisBundle } from '../../declaration/bundle.js';
import { ensureHostKey } from '../../report/host-key.js';
import { hostInboxPrefix } from '../../link/wire.js';
import { readConfigFile, writeConfig } from '../../config/config.js';
import { linkAuthOf } from '../../link/connect.js';
import { applyDeclaration, modeProblem } from '../../apply/apply.js';
import { writeDurably } from '../../store/durable.js';
import { formatPlan } from '../../report/report.js';
import { refused, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { hostPaths, KEPT_REVISION, withHost } from '../host.js';
import { finish } from './apply.js';
import type { Mode } from '../../declaration/schema.js';

/** The bundle genesis applied, carried under the state directory for `reconcile` before the mesh speaks. */
export const CARRIED_BUNDLE = 'bundle.json';

/** The host's credentials when the bundle carries them: under the state directory, 0600. */
export const CARRIED_CREDS = 'node.creds';

/** Makes or keeps the host's key (the bundle's when it carries one) and writes carried credentials; returns their path. */
function keepCarriedSecrets(stateDir: string, bundle: GenesisBundle, ctx: CommandContext): string | undefined {
  const key = ensureHostKey(stateDir, bundle.secrets?.nodeKey);
  if (key.made) ctx.log.info({ key: key.publicKey, pinned: bundle.secrets?.nodeKey !== undefined }, "the host's own key is kept: it signs every report");
  if (!bundle.secrets?.creds) return undefined;
  const path = join(stateDir, CARRIED_CREDS);
  writeDurably(path, Buffer.from(bundle.secrets.creds), 0o600);
  return path;
}

/**
 * `mesh-host genesis BUNDLE --mode adopted|converged [--dry-run]`: verifies the bundle, records the
 * mode only when none is recorded, applies it through the one apply path, and marks the bundle
 * consumed with its digest; then writes the configuration from it.
 */
export async function genesisCommand(ctx: CommandContext): Promise<number> {
  const file = ctx.args[0]!;
  const modeFlag = stringFlag(ctx.flags, 'mode');
  if (modeFlag !== 'adopted' && modeFlag !== 'converged') throw usageError("'genesis' needs --mode adopted or --mode converged");
  const dryRun = ctx.flags['dry-run'] === true;
  const bytes = readDeclarationFile(file);
  const { bundle, received } = await openBundle(bytes, file);
  const paths = hostPaths(ctx);

  return withHost(ctx, 'genesis', async (host) => {
    if (host.hasKeptDeclaration) throw refused('the mesh has spoken to this machine (declared.json is kept): genesis is over; use mesh-host reconcile');
    const consumed = host.store.state.genesisDigest;
    if (consumed !== undefined && consumed !== received.digest) {
      throw refused(`this machine is enrolled already, by a bundle whose declaration was ${consumed}; this one is ${received.digest}`);
    }
    const recorded = host.store.state.mode;
    const mode: Mode = recorded ?? modeFlag;
    const said: string[] = [];
    if (recorded !== undefined && recorded !== modeFlag) said.push(`the mode is recorded ${recorded} already; --mode ${modeFlag} is not taken (genesis records a mode only when none is recorded)`);
    const problem = modeProblem(mode, received.declaration.mode, false);
    if (problem) throw refused(`${file}: ${problem}; nothing was touched`);

    host.env.node = bundle.node;
    // The host's own key (the bundle's, when it carries one) and carried credentials are kept before the
    // apply: a key that differs from the one kept is refused before anything is touched, and an archive
    // is fetched with the host's own credentials.
    const carriedCreds = dryRun ? undefined : keepCarriedSecrets(paths.stateDir, bundle, ctx);
    // Before genesis the configuration has no link: an archive of the bundle is fetched over the bundle's.
    if (host.archiveLink) host.archiveLink.settings = { servers: bundle.link.servers, ...linkAuthOf(bundle.link), ...(carriedCreds ? { creds: carriedCreds } : {}), inboxPrefix: hostInboxPrefix(bundle.node) };
    if (host.archiveStore && bundle.link.servers.length > 0) host.env.archiveObjects = host.archiveStore;
    const result = await applyDeclaration(host.env, {
      received,
      origin: 'mesh',
      trigger: 'genesis',
      dryRun,
      mayChangeMode: false,
      said,
      diff: ctx.flags.diff === true,
      onPlan: (plan) => {
        if (!ctx.json) ctx.print(formatPlan(plan));
      },
    });
    if (result.kind === 'applied' || result.kind === 'silent') {
      // Consumed: reconcile will hold the machine to what this applied, never to other carried bytes.
      host.store.updateHead((s) => (s.genesisDigest = received.digest));
      host.store.save();
      // The carried copy keeps no secrets: they are kept apart, each in its own file.
      writeDurably(join(paths.stateDir, CARRIED_BUNDLE), bundle.secrets ? Buffer.from(JSON.stringify({ ...bundle, secrets: undefined })) : bytes, 0o600);
      // The control side put this declaration into the node's key: the daemon reads that revision as the
      // one it kept and applied, not as a new delivery to apply and report again.
      if (bundle.keyRevision !== undefined) writeDurably(join(paths.stateDir, KEPT_REVISION), Buffer.from(JSON.stringify({ revision: bundle.keyRevision, digest: received.digest })), 0o600);
      await writeConfig(paths.configPath, {
        ...readConfigFile(paths.configPath),
        node: bundle.node,
        publicKey: bundle.publicKey,
        servers: bundle.link.servers,
        ...linkAuthOf(bundle.link),
        ...(carriedCreds ? { creds: carriedCreds } : {}),
      });
      ctx.log.info({ node: bundle.node, digest: received.digest, config: paths.configPath }, 'enrolled: the bundle is consumed and the configuration written');
    }
    return finish(ctx, result);
  });
}
