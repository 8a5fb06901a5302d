import { curvePublicKey, newCurveSeed } from '../../core/declaration/sealed.js';
import { signSealingKey, type SealingClaim } from '../../link/sealing-trust.js';
import { unlinkSync, writeFileSync } from 'node:fs';
import { newNkeySeed, nkeySeed } from '../../core/declaration/nkey.js';
import { NODE_ID_PATTERN } from '../../core/declaration/ids.js';
import { Enrolments } from '../../link/enrolment.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { labelFlags } from './label-command.js';
import { describeLabels } from '../fleet/labels.js';
import { connectControl } from '../../cli/link-flags.js';

/**
 * `meshctl node-key NODE --out FILE [--replace] [--label k=v…]`: makes a host's own key pair before the host exists,
 * with its curve key (what secrets are sealed to), writes both seeds (0600, one a line) for `meshctl
 * bundle --node-key` to carry, and pins the public key, the curve key signed by it beside it, as the
 * node's in the mesh, so that its reports are held to it from the first and nothing is trusted on
 * first use. Replacing a pinned or enrolled key (a machine made anew) takes --replace. Labels given are
 * kept with the key (and added to those it has).
 */
export async function nodeKeyCommand(ctx: CommandContext): Promise<number> {
  const node = ctx.args[0]!;
  if (!new RegExp(NODE_ID_PATTERN).test(node)) throw usageError(`'${node}' is not a node id ([A-Za-z0-9_-]{1,64})`);
  const out = stringFlag(ctx.flags, 'out');
  if (!out) throw usageError("'node-key' needs --out FILE (where the host's seed is written, for the bundle)");
  const labels = labelFlags(ctx);
  const seed = newNkeySeed('node');
  const { publicKey } = nkeySeed(seed, 'node') as { publicKey: string };
  // The host's curve key is made with it: the mesh can seal secrets to the host before it first starts.
  const curveSeed = newCurveSeed();
  const sealing = signSealingKey(seed, curvePublicKey(curveSeed)!) as SealingClaim;
  try {
    writeFileSync(out, `${seed}\n${curveSeed}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    throw refused(`${out}: ${(err as NodeJS.ErrnoException).code === 'EEXIST' ? 'exists; a key is never overwritten' : (err as Error).message}`);
  }
  // Kept only once pinned: a seed whose key the mesh does not hold would enrol nothing.
  try {
    const nc = await connectControl(ctx);
    try {
      await (await Enrolments.open(nc)).pin(node, publicKey, { replace: ctx.flags.replace === true, labels, sealing });
    } finally {
      await nc.close();
    }
  } catch (err) {
    unlinkSync(out);
    throw err;
  }
  const labelled = Object.keys(labels).length > 0 ? ` with the labels ${describeLabels(labels)}` : '';
  ctx.print(ctx.json ? JSON.stringify({ node, publicKey, curveKey: sealing.key, seed: out, labels }) : `pinned public key ${publicKey} as ${node}'s key${labelled}, with its curve key ${sealing.key}; their seeds are in ${out} (keep it secret: meshctl bundle --node-key ${out} carries them to the host)`);
  return EXIT.ok;
}
