import { readFileSync, writeFileSync } from 'node:fs';
import { sign, type Envelope } from '../../declaration/envelope.js';
import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { EXIT, refused, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { readSeed } from './keys.js';
import type { GenesisBundle } from '../../declaration/bundle.js';
import { linkAuthFromFlags, listFlag, serversFromFlag } from '../link-flags.js';
import { credsProblem } from '../../link/permissions.js';
import { nkeySeed } from '../../declaration/nkey.js';
import { connectWire, countFlag } from './mesh.js';
import { checkPayloadSize, describeMark, numberAndSign, openDeclarations, putNumbered, refuseUnlessNewer } from './numbering.js';

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
  const bytes = readDeclarationFile(file);
  const seed = readSeed(key);
  const nodeFlag = stringFlag(ctx.flags, 'node');
  const epochFlag = countFlag(ctx, 'epoch', 0);
  // Checked before anything is written to the mesh.
  const secrets = carriedSecrets(ctx, nodeFlag ?? nodeOf(bytes, file));
  let envelope: Envelope;
  let node: string;
  let keyRevision: number | undefined;
  if (ctx.flags.offline === true) {
    let payload = bytes;
    if (epochFlag !== undefined) payload = Buffer.from(JSON.stringify({ ...(JSON.parse(bytes.toString('utf8')) as object), epoch: epochFlag }));
    node = (await receiveDeclaration(payload, { source: file, ...(nodeFlag ? { node: nodeFlag } : {}) })).declaration.node;
    envelope = await sign(payload, seed);
    ctx.log.warn(`the node's key was not written (--offline): the first 'meshctl send ${node}' must come after genesis has been applied, and be newer than the bundle's declaration`);
  } else {
    node = nodeFlag ?? nodeOf(bytes, file);
    const nc = await connectWire(ctx);
    try {
      const kv = await openDeclarations(nc);
      let made: Envelope | undefined;
      const put = await putNumbered(nc, kv, node, async (record) => {
        const numbered = await numberAndSign(JSON.parse(bytes.toString('utf8')), bytes, file, node, record, epochFlag, seed);
        refuseUnlessNewer(numbered.mark, record, file, node);
        checkPayloadSize(nc, numbered.bytes.length, `the signed first declaration for ${node}`);
        made = JSON.parse(Buffer.from(numbered.bytes).toString('utf8')) as Envelope;
        return numbered;
      });
      envelope = made!;
      keyRevision = put.revision;
      ctx.log.info(`the first declaration (${describeMark(put.mark)}) is the value of ${node}'s key (revision ${put.revision})`);
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
    publicKey: envelope.key,
    declaration: envelope,
    ...(keyRevision === undefined ? {} : { keyRevision }),
    ...(secrets ? { secrets } : {}),
  };
  const text = `${JSON.stringify(bundle, null, 2)}\n`;
  const out = stringFlag(ctx.flags, 'out');
  if (out) writeFileSync(out, text, { mode: 0o600 });
  else ctx.print(text);
  return EXIT.ok;
}

/** The node a plain declaration names, read before it is numbered (it may leave its sequence out). */
function nodeOf(bytes: Buffer, file: string): string {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (err) {
    throw refused(`${file}: not JSON: ${(err as Error).message}`);
  }
  const node = (value as { node?: unknown } | null)?.node;
  if (typeof node !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(node)) throw refused(`${file}: /node: not a node id ([A-Za-z0-9_-]{1,64}); nothing was sent`);
  return node;
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
    secrets.nodeKey = read(keyFile).trim();
    const pair = nkeySeed(secrets.nodeKey, 'node');
    if (typeof pair === 'string') throw refused(`${keyFile} is ${pair} (meshctl node-key ${node} makes one)`);
  }
  return secrets;
}
