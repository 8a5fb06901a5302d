import { describeOrder } from '../../core/declaration/order.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';
import { Enrolments } from '../../link/enrolment.js';
import { curvePublicKey } from '../../core/declaration/sealed.js';
import { readFileSync, writeFileSync } from 'node:fs';
import { cosign, sign, signaturesOf, type Envelope } from '../../core/declaration/envelope.js';
import { parseJsonText } from '../../core/declaration/json-syntax.js';
import { validSigners } from './proposals.js';
import { checkChain, meshDirOf, newestOf, readLocalTrust, requireControlKey, syncTrust, type MeshTrust } from './mesh-trust.js';
import { readDeclarationFile, receiveDeclaration } from '../../core/declaration/load.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { readSeed } from './keys-command.js';
import type { GenesisBundle } from '../../core/declaration/bundle.js';
import { linkAuthFromFlags, listFlag, serversFromFlag } from '../../cli/link-flags.js';
import { credsProblem } from '../../link/permissions.js';
import { nkeySeed } from '../../core/declaration/nkey.js';
import { connectWire, countFlag } from './mesh-flags.js';
import { checkPayloadSize, numberAndSign, openDeclarations, putNumbered, refuseUnlessNewer } from './numbering.js';

/**
 * `meshctl bundle FILE --key KEY --server URL [LINK…] [--epoch N] [--offline] [--out FILE]`: a genesis
 * bundle. The signed first declaration also goes into the node's key (compare-and-set, numbered as
 * `send` numbers), so the mesh's record starts with what genesis applies and the first `send` follows
 * it; the bundle carries the revision, so the host knows that value as the one it applied. With
 * `--offline` nothing is put, and the first `send` must come after genesis.
 */
export async function bundleCommand(ctx: CommandContext): Promise<number> {
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError("'bundle' needs --key FILE");
  const servers = serversFromFlag(ctx.flags);
  if (servers.length === 0) throw usageError("'bundle' needs --server URL (several: comma-separated)");
  // A site's host connects to its leaf node, while meshctl writes the first declaration at the hub.
  const hostServers = listFlag(ctx.flags, 'host-server');
  const file = ctx.args[0]!;
  const seed = readSeed(key);
  // Under a threshold above 1 the first declaration is signed by as many control keys: no host would take it otherwise.
  const others = listFlag(ctx.flags, 'sign').map((f) => ({ file: f, seed: readSeed(f) }));
  const signAll = (made: Envelope, current: MeshTrust | undefined) => signedByAll(made, current, others);
  const nodeFlag = stringFlag(ctx.flags, 'node');
  const epochFlag = countFlag(ctx, 'epoch', 0);
  // The file with its node: --node fills in a file that names none.
  const { bytes, node: named } = withNode(readDeclarationFile(file), file, nodeFlag);
  // Checked before anything is written to the mesh, or any bucket or stream made there: the carried
  // secrets, and the declaration as the host will check it (numbered as it would be).
  const secrets = carriedSecrets(ctx, named);
  const parsed = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  await receiveDeclaration(Buffer.from(JSON.stringify({ ...parsed, sequence: parsed.sequence ?? 1 })), { source: file, node: named });
  let envelope: Envelope;
  let node: string;
  // The trust root the host will pin: the mesh's newest version (the directory's, offline).
  let trust: MeshTrust | undefined;
  let keyRevision: number | undefined;
  if (ctx.flags.offline === true) {
    ({ envelope, node, trust } = await offlineFirst(ctx, { file, bytes, key, seed, nodeFlag, epochFlag, secrets, signAll }));
    ctx.log.warn(`the node's key was not written (--offline): the first 'meshctl send ${node}' must come after genesis has been applied, and be newer than the bundle's declaration`);
  } else {
    node = named;
    const nc = await connectWire(ctx);
    try {
      trust = await syncTrust(nc, meshDirOf(ctx));
      requireControlKey(trust, key, seed);
      const kv = await openDeclarations(nc);
      let made: Envelope | undefined;
      let enrolments: Promise<Enrolments> | undefined;
      const sealer = new Sealer(seed, enrolledCurveKeys(() => (enrolments ??= Enrolments.open(nc))));
      const put = await putNumbered(nc, kv, node, async (record) => {
        const parsed = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
        const sealed = await sealer.sealFor(parsed, node, record);
        const numbered = await numberAndSign(sealed, sealed === parsed ? bytes : Buffer.from(JSON.stringify(sealed)), file, node, record, epochFlag, seed);
        refuseUnlessNewer(numbered.mark, record, file, node);
        made = signAll(JSON.parse(Buffer.from(numbered.bytes).toString('utf8')) as Envelope, trust);
        const signedBytes = Buffer.from(JSON.stringify(made));
        checkPayloadSize(nc, signedBytes.length, `the signed first declaration for ${node}`);
        return { bytes: signedBytes, mark: numbered.mark };
      });
      envelope = made!;
      keyRevision = put.revision;
      ctx.log.info(`the first declaration (${describeOrder(put.mark)}) is the value of ${node}'s key (revision ${put.revision})`);
    } finally {
      await nc.close();
    }
  }
  // With carried credentials, --creds is meshctl's own connection, not a path on the host.
  const hostAuth = linkAuthFromFlags(ctx.flags);
  if (secrets?.creds) delete hostAuth.creds;
  const bundle: GenesisBundle = {
    version: 1,
    node,
    // Paths as the host will find them; secrets only when the operator asks to carry them.
    link: { servers: hostServers.length > 0 ? hostServers : servers, ...hostAuth },
    publicKey: signaturesOf(envelope)[0]!.key,
    declaration: envelope,
    ...(trust ? { trust: trust.records[trust.records.length - 1]! } : {}),
    ...(keyRevision === undefined ? {} : { keyRevision }),
    ...(secrets ? { secrets } : {}),
  };
  const text = `${JSON.stringify(bundle, null, 2)}\n`;
  const out = stringFlag(ctx.flags, 'out');
  if (out) writeFileSync(out, text, { mode: 0o600 });
  else ctx.print(text);
  return EXIT.ok;
}

/**
 * `--offline`: the first declaration signed with nothing put, under the mesh directory's trust root; its
 * sensitive values sealed to the curve key the bundle carries, the only one there is to seal to.
 */
async function offlineFirst(ctx: CommandContext, o: { file: string; bytes: Buffer; key: string; seed: string; nodeFlag: string | undefined; epochFlag: number | undefined; secrets: GenesisBundle['secrets']; signAll: (made: Envelope, current: MeshTrust | undefined) => Envelope }): Promise<{ envelope: Envelope; node: string; trust: MeshTrust | undefined }> {
  const dir = meshDirOf(ctx);
  const local = dir ? readLocalTrust(dir) : [];
  const trust = local.length > 0 ? checkChain(local, dir!) : undefined;
  requireControlKey(trust, o.key, o.seed);
  const node = (await receiveDeclaration(o.bytes, { source: o.file, ...(o.nodeFlag ? { node: o.nodeFlag } : {}) })).declaration.node;
  const carried = o.secrets?.sealingKey === undefined ? undefined : curvePublicKey(o.secrets.sealingKey);
  const parsed = JSON.parse(o.bytes.toString('utf8')) as Record<string, unknown>;
  const sealed = await new Sealer(o.seed, async () => carried).sealFor(parsed, node);
  const payload = o.epochFlag !== undefined || sealed !== parsed ? Buffer.from(JSON.stringify({ ...sealed, ...(o.epochFlag === undefined ? {} : { epoch: o.epochFlag }) })) : o.bytes;
  return { envelope: o.signAll(await sign(payload, o.seed), trust), node, trust };
}

/** The envelope signed by each other key given (--sign), and enough of them for the trust root's threshold; a refusal otherwise. */
function signedByAll(made: Envelope, current: MeshTrust | undefined, others: Array<{ file: string; seed: string }>): Envelope {
  for (const other of others) requireControlKey(current, other.file, other.seed);
  const signed = others.reduce((e, o) => cosign(e, o.seed), made);
  if (!current) return signed;
  const { version, control: { threshold } } = newestOf(current);
  const have = validSigners(current, signed).length;
  if (have < threshold) throw refused(`the bundle's declaration needs ${threshold} distinct control keys' signatures (trust version ${version}); it has ${have}: add --sign FILE for each other key; nothing was put`);
  return signed;
}

/**
 * The plain declaration and the node it is for, read before it is numbered (it may leave its sequence
 * out). `--node` names the node of a file that names none (the file's bytes then gain it); a file that
 * names another node than `--node` is refused.
 */
function withNode(bytes: Buffer, file: string, nodeFlag: string | undefined): { bytes: Buffer; node: string } {
  const json = parseJsonText(bytes.toString('utf8'));
  if (!json.ok) throw refused(`${file}: not JSON: ${json.message}; nothing was sent`);
  const value = json.value;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw refused(`${file}: a declaration is a JSON object; nothing was sent`);
  const named = (value as { node?: unknown }).node;
  if (nodeFlag !== undefined && named !== undefined && named !== nodeFlag) throw refused(`${file} names the node ${JSON.stringify(named)}, not ${nodeFlag} (--node): leave "node" out of the file, or give its node; nothing was sent`);
  const node = named ?? nodeFlag;
  if (typeof node !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(node)) {
    throw refused(node === undefined ? `${file} names no node: give --node NODE, or "node" in the file; nothing was sent` : `${file}: /node: not a node id ([A-Za-z0-9_-]{1,64}); nothing was sent`);
  }
  return { bytes: named === undefined ? Buffer.from(JSON.stringify({ ...value, node })) : bytes, node };
}

/**
 * `--embed-creds FILE` (the host's credentials, made by meshctl node-creds) and `--node-key FILE` (its
 * own key seed, made and pinned by meshctl node-key): read, checked for this node, carried.
 */
function carriedSecrets(ctx: CommandContext, node: string): GenesisBundle['secrets'] {
  const credsFile = stringFlag(ctx.flags, 'embed-creds');
  const keyFile = stringFlag(ctx.flags, 'node-key');
  if (!credsFile && !keyFile) return undefined;
  const read = (path: string) => {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      throw refused(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
  };
  const secrets: NonNullable<GenesisBundle['secrets']> = {};
  if (credsFile) {
    secrets.creds = read(credsFile);
    const problem = credsProblem(secrets.creds, node);
    if (problem) throw refused(`${credsFile} is not for ${node}: ${problem}`);
  }
  if (keyFile) {
    // The node's seed, and on the next line its curve key's seed (meshctl node-key writes both).
    const [nodeKey = '', sealingKey] = read(keyFile).trim().split('\n').map((line) => line.trim());
    secrets.nodeKey = nodeKey;
    const pair = nkeySeed(secrets.nodeKey, 'node');
    if (typeof pair === 'string') throw refused(`${keyFile} is ${pair} (meshctl node-key ${node} makes one)`);
    if (sealingKey !== undefined) {
      if (curvePublicKey(sealingKey) === undefined) throw refused(`${keyFile}: its second line is not a curve seed (SX…) (meshctl node-key ${node} makes one)`);
      secrets.sealingKey = sealingKey;
    }
  }
  return secrets;
}
