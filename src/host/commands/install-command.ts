import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { loadConfig } from '../../core/config/config.js';
import { readDeclarationFile } from '../../core/declaration/load.js';
import { KEPT_DECLARATION, type HostPaths } from '../env/host-paths.js';
import { acquireLock } from '../../core/store/store-lock.js';
import { STATE_FILE, ensureStateDir } from '../../core/store/store.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import type { InstallStep, InstallTarget } from '../release/install-release.js';
import { DEFAULT_CONFIG, DEFAULT_STATE_DIR, output, stringFlag, type CommandContext } from '../../cli/context.js';

interface Said {
  action: string;
  target: string;
  status: 'done' | 'unchanged' | 'planned';
  detail?: string;
}

const said = (steps: InstallStep[], dryRun: boolean): Said[] =>
  steps.map((s) => ({ action: s.action, target: s.target, status: !s.needed ? 'unchanged' : dryRun ? 'planned' : 'done', ...(s.detail ? { detail: s.detail } : {}) }));

function print(ctx: CommandContext, what: string, steps: Said[], extra: Record<string, unknown>): void {
  const changed = steps.some((s) => s.status !== 'unchanged');
  output(ctx, { steps, changed, ...extra }, () =>
    [
      ...steps.filter((s) => s.status !== 'unchanged').map((s) => `${s.status === 'planned' ? 'would ' : ''}${s.action}: ${s.target}${s.detail ? ` (${s.detail})` : ''}`),
      changed ? `${what}: ${steps.filter((s) => s.status !== 'unchanged').length} step(s) ${steps.some((s) => s.status === 'planned') ? 'planned (dry run: nothing was touched)' : 'done'}` : `${what}: nothing to change, it is installed as asked`,
    ].join('\n'),
  );
}

/** The install as the running system names it: paths without --root, the manager the inventory finds. */
async function targetOf(ctx: CommandContext): Promise<InstallTarget & { rootedConfig: string }> {
  const [{ buildInfo }, { chooseServiceManager }] = await Promise.all([import('../release/version.js'), import('../../machine/services/choose.js')]);
  const root = stringFlag(ctx.flags, 'root') ?? '/';
  const stateDir = stringFlag(ctx.flags, 'state-dir') ?? DEFAULT_STATE_DIR;
  const configPath = stringFlag(ctx.flags, 'config') ?? DEFAULT_CONFIG;
  if (!stateDir.startsWith('/') || !configPath.startsWith('/')) throw usageError('--state-dir and --config name paths on the installed system: they must be absolute');
  const rootedConfig = join(root, configPath);
  const { config } = loadConfig(rootedConfig);
  const choice = await chooseServiceManager(ctx.runner, config.serviceManager);
  if (!choice.manager) ctx.log.warn({ reason: choice.reason }, 'no service manager: the files are installed, no service');
  return { root, stateDir, configPath, version: buildInfo().version, source: process.execPath, manager: choice.manager, rootedConfig };
}

/** The installer installs the single executable it runs as; a script run by node is not one. */
async function requireSingleExecutable(): Promise<void> {
  let sea: boolean;
  try {
    sea = (await import('node:sea')).isSea();
  } catch {
    sea = false;
  }
  if (!sea) throw refused('mesh-host install installs the single executable it runs as, and this is mesh-host run by node: build one with npm run release and run its install');
}

/**
 * `mesh-host install [--bundle FILE --mode adopted|converged] [--no-start] [--dry-run] [--root DIR]`:
 * this executable as a release with `current` linked to it, the service definition for the service
 * manager the inventory finds, the state (0700) and configuration directories; enrols with the bundle;
 * enables and starts the service. It takes the host's lock, so it never races an apply; a second run
 * changes nothing and says so.
 */
export async function installCommand(ctx: CommandContext): Promise<number> {
  const dryRun = ctx.flags['dry-run'] === true;
  const bundle = stringFlag(ctx.flags, 'bundle');
  const mode = stringFlag(ctx.flags, 'mode');
  if (bundle !== undefined && mode !== 'adopted' && mode !== 'converged') throw usageError("'install --bundle FILE' needs --mode adopted or --mode converged");
  if (bundle === undefined && mode !== undefined) throw usageError("'install --mode' goes with --bundle FILE");
  if (bundle !== undefined && !existsSync(bundle)) throw usageError(`the bundle ${bundle} does not exist`);
  await requireSingleExecutable();
  const { installFileSteps, runSteps, serviceSteps } = await import('../release/install-release.js');
  const target = await targetOf(ctx);
  const stateDir = join(target.root, target.stateDir);
  const verified = await verifyThisRelease(target.source, bundle, stateDir, target.rootedConfig);
  const files = await installFileSteps(target);
  const steps: Said[] = [verified, ...said(files, dryRun)];
  if (!dryRun) {
    // The state directory first: the lock lives in it.
    await runSteps(files.slice(0, 1), false);
    ensureStateDir(stateDir);
    const lock = await acquireLock(stateDir, { command: 'mesh-host install', timeoutMs: 120_000 });
    try {
      await runSteps(files.slice(1), false);
    } finally {
      lock.release();
    }
  }
  // Enrolled in the same step, through the one genesis path (it takes the lock itself).
  if (bundle !== undefined && mode !== undefined) {
    const paths: HostPaths = { stateDir, configPath: target.rootedConfig, root: target.root };
    const enrolled = await enrolment(ctx, paths, bundle, mode as 'adopted' | 'converged', dryRun);
    steps.push(enrolled.said);
    if (enrolled.code !== EXIT.ok) {
      ctx.log.error({ bundle, code: enrolled.code }, 'the enrolment failed: the service is neither enabled nor started');
      print(ctx, 'install', steps, { version: target.version, enrolled: false });
      return enrolled.code;
    }
  }
  const started = ctx.flags['no-start'] !== true && target.manager !== undefined && target.root === '/';
  if (started) {
    const changed = files.filter((s) => s.needed);
    const service = await serviceSteps(target.manager!, { reload: changed.some((s) => s.definition === true), restart: changed.length > 0 });
    steps.push(...said(service, dryRun));
    await runSteps(service, dryRun);
  } else if (target.manager && ctx.flags['no-start'] !== true) {
    ctx.log.info({ root: target.root }, 'the service is neither enabled nor started: --root names another tree');
  }
  print(ctx, `install of mesh-host ${target.version}`, steps, { version: target.version, manager: target.manager?.name ?? null, started });
  return 0;
}

/**
 * This release checked against the release keys of the trust root: the bundle's when one is given,
 * else the one the machine holds. Refused (exit 3) when its signature or a digest does not match,
 * naming which; said, not refused, when no trust root here pins release keys.
 */
async function verifyThisRelease(source: string, bundle: string | undefined, stateDir: string, configPath: string): Promise<Said> {
  const [{ releaseKeysOf, releaseRefusal }, { openTrustRecord }, { HeldTrust }, { SIGNATURE_FILE, SUMS_FILE }] = await Promise.all([
    import('../release/verify-release.js'),
    import('../../core/declaration/trust-root.js'),
    import('../env/held-trust.js'),
    import('../../core/declaration/release-sums.js'),
  ]);
  const dir = dirname(source);
  const action = `verify the release (${SUMS_FILE}, ${SIGNATURE_FILE})`;
  let root;
  if (bundle !== undefined) {
    // The bundle's trust record is checked whole by genesis; here only its release keys are read.
    const trust = (JSON.parse(readFileSync(bundle, 'utf8')) as { trust?: unknown }).trust;
    const opened = trust === undefined ? undefined : openTrustRecord(trust);
    if (opened && !opened.ok) throw refused(`${bundle}: its trust root: ${opened.reason}; nothing was touched`);
    root = opened?.opened.root;
  } else if (existsSync(stateDir)) {
    root = new HeldTrust(stateDir, loadConfig(configPath).config.publicKey).newest();
  }
  const keys = releaseKeysOf(root);
  if (!keys) return { action, target: dir, status: 'unchanged', detail: 'not checked: the trust root pins no release keys' };
  const refusal = await releaseRefusal(dir, [basename(source)], keys);
  if (refusal) throw refused(`the release is refused (${refusal.which}): ${refusal.problem}; nothing was touched`, [], 'forged');
  return { action, target: dir, status: 'unchanged', detail: `signed by the release keys of trust version ${keys.trustVersion}` };
}

/**
 * Genesis with the bundle, unless this machine is enrolled by it already (or the mesh has spoken to it
 * since): then nothing is done and that is said, so that a second install changes nothing.
 */
async function enrolment(ctx: CommandContext, paths: HostPaths, bundle: string, mode: 'adopted' | 'converged', dryRun: boolean): Promise<{ said: Said; code: number }> {
  const [{ genesis }, { openBundle }] = await Promise.all([import('../genesis/genesis.js'), import('../../core/declaration/bundle.js')]);
  const bytes = readDeclarationFile(bundle);
  const { received, bundle: opened } = await openBundle(bytes, bundle);
  const action = `enrol (genesis, --mode ${mode})`;
  const already = existsSync(join(paths.stateDir, KEPT_DECLARATION)) ? 'the mesh has spoken to this machine already' : genesisDigestOf(paths.stateDir) === received.digest ? 'enrolled with this bundle already' : undefined;
  if (already) return { said: { action, target: bundle, status: 'unchanged', detail: already }, code: EXIT.ok };
  // A dry run touches nothing: not even the state directory genesis would open.
  if (dryRun) return { said: { action, target: bundle, status: 'planned', detail: `the bundle for node ${opened.node} was read and verified` }, code: EXIT.ok };
  const result = await genesis(paths, ctx, { bytes, source: bundle, mode, dryRun: false });
  if (result.kind === 'refused') throw refused(result.reason, result.details, result.refusal);
  if (result.kind === 'planned') throw new Error('genesis planned where it was asked to apply');
  const { outcome, sequence, error } = result.report;
  const detail = `report ${sequence}: ${outcome}${error ? ` (${error.resource ? `${error.resource}: ` : ''}${error.message})` : ''}`;
  return { said: { action, target: bundle, status: 'done', detail }, code: outcome === 'converged' ? EXIT.ok : EXIT.failed };
}

/** The digest of the bundle genesis consumed, as the store saved it (read whole, without the lock). */
function genesisDigestOf(stateDir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(join(stateDir, STATE_FILE), 'utf8')) as { genesisDigest?: string }).genesisDigest;
  } catch {
    return undefined;
  }
}

/** `mesh-host uninstall [--purge] [--dry-run] [--root DIR]`: the service and the releases go; the state stays unless --purge. */
export async function uninstallCommand(ctx: CommandContext): Promise<number> {
  const dryRun = ctx.flags['dry-run'] === true;
  const purge = ctx.flags.purge === true;
  const { runSteps, uninstallSteps, SERVICE } = await import('../release/install-release.js');
  const target = await targetOf(ctx);
  const unit = target.manager?.name === 'systemd' ? `${SERVICE}.service` : SERVICE;
  const known = target.manager ? (await target.manager.query([unit])).get(unit) : undefined;
  const steps = uninstallSteps(target, { purge, serviceKnown: known !== undefined && known.loadState !== 'not-found' });
  const stateDir = join(target.root, target.stateDir);
  if (!dryRun) {
    // The service first (it ends between applies), then the files, under the lock like every apply.
    const service = steps.filter((s) => s.action.endsWith('the service'));
    await runSteps(service, false);
    const rest = steps.filter((s) => !service.includes(s));
    const keep = rest.filter((s) => !s.action.endsWith('(--purge)'));
    if (existsSync(stateDir)) {
      const lock = await acquireLock(stateDir, { command: 'mesh-host uninstall', timeoutMs: 120_000 });
      try {
        await runSteps(keep, false);
      } finally {
        lock.release();
      }
    } else await runSteps(keep, false);
    await runSteps(rest.filter((s) => !keep.includes(s)), false);
  }
  print(ctx, 'uninstall', said(steps, dryRun), { purged: purge });
  return 0;
}
