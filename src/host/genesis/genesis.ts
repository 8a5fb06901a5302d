import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { applyDeclaration, modeProblem, type ApplyResult } from '../../engine/apply/apply.js';
import { readConfigFile, writeConfig } from '../../core/config/config.js';
import { linkAuthOf } from '../../core/config/link-auth.js';
import { openBundle, type GenesisBundle } from '../../core/declaration/bundle.js';
import { hostInboxPrefix } from '../../link/wire.js';
import { ensureHostKey } from '../../engine/report/host-key.js';
import { ensureSealingKey } from '../../engine/report/sealing-key.js';
import type { Logger } from '../../core/system/log.js';
import type { Mode } from '../../core/declaration/schema.js';
import type { HostDeps } from '../env/host-environment.js';
import { openHost } from '../env/open-host.js';
import { CARRIED_BUNDLE, CARRIED_CREDS, KEPT_DECLARATION, type HostPaths } from '../env/host-paths.js';
import type { Plan } from '../../engine/report/report.js';
import { writeDurably } from '../../core/system/durable.js';
import { refused } from '../../core/system/errors.js';
import { pinTrust } from '../env/held-trust.js';

export interface GenesisRequest {
  /** The bundle's bytes, and what to call it in refusals (its path). */
  bytes: Buffer;
  source: string;
  /** The mode to record, taken only when none is recorded yet. */
  mode: Mode;
  dryRun: boolean;
  /** Show a unified diff of each file whose content changes. */
  diff?: boolean;
  /** Called with the plan before anything is touched. */
  onPlan?: (plan: Plan) => void;
}

/** Makes or keeps the host's key (the bundle's when it carries one) and writes carried credentials; returns their path. */
function keepCarriedSecrets(stateDir: string, bundle: GenesisBundle, log: Logger): string | undefined {
  const key = ensureHostKey(stateDir, bundle.secrets?.nodeKey);
  if (key.made) log.info({ key: key.publicKey, pinned: bundle.secrets?.nodeKey !== undefined }, "the host's own key is kept: it signs every report");
  const curve = ensureSealingKey(stateDir, bundle.secrets?.sealingKey);
  if (curve.made) log.info({ curveKey: curve.publicKey, pinned: bundle.secrets?.sealingKey !== undefined }, "the host's curve key is kept: the mesh seals its secrets to it");
  if (!bundle.secrets?.creds) return undefined;
  const path = join(stateDir, CARRIED_CREDS);
  writeDurably(path, Buffer.from(bundle.secrets.creds), 0o600);
  return path;
}

/**
 * The one genesis path, for `mesh-host genesis`, for an unenrolled daemon given a bundle, and for an
 * installer: verifies the bundle, records the mode only when none is recorded, applies it through the
 * one apply path under the lock, and marks the bundle consumed with its digest; then writes the
 * configuration from it. A refusal is thrown (exit 3, with its kind); an apply that ran is returned.
 */
export async function genesis(paths: HostPaths, deps: HostDeps, request: GenesisRequest): Promise<ApplyResult> {
  const { bytes, source, dryRun } = request;
  const { bundle, received } = await openBundle(bytes, source);
  // With no state directory yet no mode is recorded: a bundle of the other mode is refused before one is made.
  const early = existsSync(paths.stateDir) ? undefined : modeProblem(request.mode, received.declaration.mode, false);
  if (early) throw refused(`${source}: ${early}; nothing was touched`, [], 'mode');
  return openHost(paths, deps, 'genesis', async (host) => {
    if (host.kept.exists()) throw refused(`the mesh has spoken to this machine (${KEPT_DECLARATION} is kept): genesis is over; use mesh-host reconcile`, [], 'state');
    const consumed = host.store.state.genesisDigest;
    if (consumed !== undefined && consumed !== received.digest) {
      throw refused(`this machine is enrolled already, by a bundle whose declaration was ${consumed}; this one is ${received.digest}`, [], 'state');
    }
    const recorded = host.store.state.mode;
    const mode: Mode = recorded ?? request.mode;
    const said: string[] = [];
    if (recorded !== undefined && recorded !== request.mode) said.push(`the mode is recorded ${recorded} already; --mode ${request.mode} is not taken (genesis records a mode only when none is recorded)`);
    const problem = modeProblem(mode, received.declaration.mode, false);
    if (problem) throw refused(`${source}: ${problem}; nothing was touched`, [], 'mode');

    host.env.node = bundle.node;
    // The host's own key (the bundle's, when it carries one) and carried credentials are kept before the
    // apply: a key that differs from the one kept is refused before anything is touched, and an archive
    // is fetched with the host's own credentials.
    const carriedCreds = dryRun ? undefined : keepCarriedSecrets(paths.stateDir, bundle, deps.log);
    // Before genesis the configuration has no link: an archive of the bundle is fetched over the bundle's.
    host.archiveLink.settings = { servers: bundle.link.servers, ...linkAuthOf(bundle.link), ...(carriedCreds ? { creds: carriedCreds } : {}), inboxPrefix: hostInboxPrefix(bundle.node) };
    const result = await applyDeclaration(host.env, {
      received,
      origin: 'mesh',
      trigger: 'genesis',
      dryRun,
      mayChangeMode: false,
      said,
      diff: request.diff === true,
      ...(request.onPlan ? { onPlan: request.onPlan } : {}),
    });
    if (result.kind === 'applied' || result.kind === 'silent') {
      // Consumed: reconcile will hold the machine to what this applied, never to other carried bytes.
      host.store.updateHead((s) => (s.genesisDigest = received.digest));
      host.store.save();
      // The carried copy keeps no secrets: they are kept apart, each in its own file.
      writeDurably(join(paths.stateDir, CARRIED_BUNDLE), bundle.secrets ? Buffer.from(JSON.stringify({ ...bundle, secrets: undefined })) : bytes, 0o600);
      // The control side put this declaration into the node's key: the daemon reads that revision as the
      // one it kept and applied, not as a new delivery to apply and report again.
      // The trust root the bundle carries is pinned: the host follows every version after it.
      if (bundle.trust) pinTrust(paths.stateDir, bundle.trust);
      if (bundle.keyRevision !== undefined) host.kept.noteRevision(bundle.keyRevision, received.digest);
      await writeConfig(paths.configPath, {
        ...readConfigFile(paths.configPath),
        node: bundle.node,
        publicKey: bundle.publicKey,
        servers: bundle.link.servers,
        ...linkAuthOf(bundle.link),
        ...(carriedCreds ? { creds: carriedCreds } : {}),
      });
      deps.log.info({ node: bundle.node, digest: received.digest, config: paths.configPath }, 'enrolled: the bundle is consumed and the configuration written');
    }
    return result;
  });
}
