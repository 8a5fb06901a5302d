import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { output, stringFlag, type CommandContext } from '../../cli/context.js';
import { listFlag } from '../../cli/link-flags.js';
import { signRoot, stepProblem, retiredKeys, TRUST_ROOT_KIND, rootProblem, type TrustRecord, type TrustRoot } from '../../core/declaration/trust-root.js';
import { latestPerSubject } from '../../link/latest.js';
import { HEARTBEAT_SUBJECTS, HEARTBEATS_STREAM, heartbeatSubject } from '../../link/wire.js';
import { MESH_FILE } from '../setup/mesh-dir.js';
import { readSeed } from './keys-command.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { meshDirOf, newestOf, opened, publicKeyOfSeed, publishVersion, syncTrust, TRUST_LAYOUT, writeLocalVersion, type MeshTrust } from './mesh-trust.js';

/** `meshctl trust show|rotate|recover|release`. */
export async function trustCommand(ctx: CommandContext): Promise<number> {
  const action = ctx.args[0];
  if (action !== 'show' && action !== 'rotate' && action !== 'recover' && action !== 'release') throw usageError("'trust' needs show, rotate, recover or release");
  const dir = meshDirOf(ctx);
  const nc = await connectWire(ctx);
  try {
    const trust = await syncTrust(nc, dir);
    if (!trust) throw refused('the mesh holds no trust root, and no mesh directory gives one (meshctl init makes version 1; --mesh DIR names its directory)');
    if (action === 'show') return await show(ctx, nc, trust);
    const made = action === 'rotate' ? rotation(ctx, trust) : action === 'release' ? releaseRotation(ctx, trust) : recovery(ctx, trust);
    const problem = stepProblem(newestOf(trust), opened(made.record), retiredKeys(trust.roots));
    if (problem) throw refused(`the new trust version would be refused by every host: ${problem}; nothing was published`);
    await publishVersion(nc, made.root.version, made.record);
    if (dir) {
      writeLocalVersion(dir, made.root.version, made.record);
      followNewKey(dir, made.root.version, made.keyFile);
    }
    const retired = newestOf(trust).control.keys.filter((k) => !made.root.control.keys.includes(k));
    output(ctx, { version: made.root.version, control: made.root.control, recovery: made.root.recovery, retired, defaultKey: dir ? join(dir, TRUST_LAYOUT.controlKey(made.root.version)) : undefined }, () =>
      [
        `trust version ${made.root.version} published: control keys ${made.root.control.keys.join(', ')} (${made.root.control.threshold} needed)`,
        ...(retired.length ? [`  retired: ${retired.join(', ')}: every host refuses what they sign once it follows version ${made.root.version}`] : []),
        ...(dir ? [`  ${join(dir, MESH_FILE)} now signs with ${join(dir, TRUST_LAYOUT.controlKey(made.root.version))}`] : []),
        '  each host follows it when it hears the put, or on its next start (meshctl trust show names a host behind)',
      ].join('\n'),
    );
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}

interface MadeVersion {
  root: TrustRoot;
  record: TrustRecord;
  /** The new default signing key's seed file. */
  keyFile: string;
}

/** A key given to --add: a seed file (it signs too) or a public key. */
function addedKey(text: string): { key: string; seed?: string } {
  if (/^O[A-Z2-7]{55}$/.test(text)) return { key: text };
  const seed = readSeed(text);
  return { key: publicKeyOfSeed(text, seed), seed };
}

function newRoot(trust: MeshTrust, control: TrustRoot['control']): TrustRoot {
  const held = newestOf(trust);
  // The release keys go on as they were: a rotation of the control keys does not change who signs releases.
  const root: TrustRoot = { kind: TRUST_ROOT_KIND, version: held.version + 1, control, recovery: held.recovery, ...(held.release ? { release: held.release } : {}) };
  const problem = rootProblem(root);
  if (problem) throw usageError(`the new trust version: ${problem}`);
  return root;
}

/** `trust rotate --to KEY [--add KEY…] [--threshold N] [--sign FILE…]`: signed by the current key(s) and the new ones. */
function rotation(ctx: CommandContext, trust: MeshTrust): MadeVersion {
  const to = stringFlag(ctx.flags, 'to');
  if (!to) throw usageError("'trust rotate' needs --to KEY (the new control key's seed file; meshctl keygen makes one)");
  const current = stringFlag(ctx.flags, 'key');
  if (!current) throw usageError("'trust rotate' needs --key FILE (a control key of the current version; the mesh directory's default)");
  const toSeed = readSeed(to);
  const added = listFlag(ctx.flags, 'add').map(addedKey);
  const keys = [...new Set([publicKeyOfSeed(to, toSeed), ...added.map((a) => a.key)])];
  const threshold = countFlag(ctx, 'threshold', 1) ?? 1;
  const root = newRoot(trust, { keys, threshold });
  const seeds = [readSeed(current), ...listFlag(ctx.flags, 'sign').map(readSeed), toSeed, ...added.flatMap((a) => (a.seed ? [a.seed] : []))];
  return { root, record: signRoot(root, seeds), keyFile: to };
}

/**
 * `trust release --release-key KEY… [--sign FILE…]`: the same control keys, these release keys (what a
 * release a host installs or updates to must be signed by), signed by the current control keys.
 */
function releaseRotation(ctx: CommandContext, trust: MeshTrust): MadeVersion {
  const current = stringFlag(ctx.flags, 'key');
  if (!current) throw usageError("'trust release' needs --key FILE (a control key of the current version; the mesh directory's default)");
  const given = listFlag(ctx.flags, 'release-key').map(addedKey);
  if (given.length === 0) throw usageError("'trust release' needs --release-key KEY (the release key's public key O… or its seed file), once per key");
  const root: TrustRoot = { ...newRoot(trust, newestOf(trust).control), release: { keys: [...new Set(given.map((g) => g.key))], threshold: 1 } };
  const problem = rootProblem(root);
  if (problem) throw usageError(`the new trust version: ${problem}`);
  return { root, record: signRoot(root, [readSeed(current), ...listFlag(ctx.flags, 'sign').map(readSeed)]), keyFile: current };
}

/** `trust recover --recovery-key FILE… --to KEY`: the recovery keys alone replace the control keys. */
function recovery(ctx: CommandContext, trust: MeshTrust): MadeVersion {
  const to = stringFlag(ctx.flags, 'to');
  const recoveryFiles = listFlag(ctx.flags, 'recovery-key');
  if (!to || recoveryFiles.length === 0) throw usageError("'trust recover' needs --recovery-key FILE (as many as the recovery threshold) and --to KEY (the new control key's seed file)");
  const toSeed = readSeed(to);
  const held = newestOf(trust);
  for (const file of recoveryFiles) {
    const key = publicKeyOfSeed(file, readSeed(file));
    if (!held.recovery.keys.includes(key)) throw refused(`${file} (${key}) is not a recovery key of trust version ${held.version}; nothing was published`);
  }
  const root = newRoot(trust, { keys: [publicKeyOfSeed(to, toSeed)], threshold: 1 });
  return { root, record: signRoot(root, [...recoveryFiles.map(readSeed), toSeed]), keyFile: to };
}

/** The mesh directory's default signing key follows the new version: the key copied in, mesh.json pointed at it. */
function followNewKey(dir: string, version: number, keyFile: string): void {
  const copy = join(dir, TRUST_LAYOUT.controlKey(version));
  mkdirSync(dirname(copy), { recursive: true, mode: 0o700 });
  copyFileSync(keyFile, copy);
  writeFileSync(copy, readFileSync(copy), { mode: 0o600 });
  const meshPath = join(dir, MESH_FILE);
  const mesh = JSON.parse(readFileSync(meshPath, 'utf8')) as Record<string, unknown>;
  writeFileSync(meshPath, `${JSON.stringify({ ...mesh, key: TRUST_LAYOUT.controlKey(version) }, null, 2)}\n`);
}

/** What each host's last heartbeat says it holds. */
export async function trustVersionsHeld(nc: NatsConnection): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  let beats;
  try {
    beats = await latestPerSubject(nc, HEARTBEATS_STREAM, HEARTBEAT_SUBJECTS);
  } catch {
    return out;
  }
  for (const m of beats.values()) {
    try {
      const beat = JSON.parse(Buffer.from(m.bytes).toString('utf8')) as { trustVersion?: unknown };
      out.set(m.subject.slice(heartbeatSubject('').length), typeof beat.trustVersion === 'number' ? beat.trustVersion : null);
    } catch {
      // A heartbeat that does not read says nothing of trust.
    }
  }
  return out;
}

async function show(ctx: CommandContext, nc: NatsConnection, trust: MeshTrust): Promise<number> {
  const newest = newestOf(trust);
  const held = await trustVersionsHeld(nc);
  const hosts = [...held.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([node, version]) => ({ node, version, behind: version === null || version < newest.version }));
  const behind = hosts.filter((h) => h.behind);
  const retired = retiredKeys(trust.roots);
  output(ctx, { version: newest.version, versions: trust.roots, retired: Object.fromEntries(retired), hosts }, () =>
    [
      `trust version ${newest.version}`,
      `  control keys (${newest.control.threshold} of ${newest.control.keys.length} sign a declaration): ${newest.control.keys.join(', ')}`,
      `  recovery keys (${newest.recovery.threshold} of ${newest.recovery.keys.length} replace them): ${newest.recovery.keys.join(', ')}`,
      ...[...retired].map(([key, at]) => `  retired at version ${at}: ${key}`),
      ...hosts.map((h) => `  ${h.node.padEnd(20)} holds version ${h.version ?? '? (a host that does not say)'}${h.behind ? '  BEHIND' : ''}`),
      ...(behind.length ? [`${behind.length} host${behind.length === 1 ? ' is' : 's are'} behind: ${behind.map((h) => h.node).join(', ')}`] : []),
    ].join('\n'),
  );
  return EXIT.ok;
}
