import { describeOrder } from '../../core/declaration/order.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { output, stringFlag, type CommandContext } from '../../cli/context.js';
import { cosign } from '../../core/declaration/envelope.js';
import { readSeed } from './keys-command.js';
import { connectWire } from './mesh-flags.js';
import { meshDirOf, newestOf, publicKeyOfSeed, requireControlKey, syncTrust, type MeshTrust } from './mesh-trust.js';
import { listProposals, openProposals, readProposal, validSigners, type Proposal } from './proposals.js';
import { openDeclarations, putSigned } from './numbering.js';
import { isRevisionConflict } from '../../link/revision.js';
import { approveRollout } from './rollout-approval.js';

const needs = (trust: MeshTrust) => newestOf(trust).control.threshold;

/**
 * `meshctl approve ID --key KEY`: adds this control key's signature to every copy of the proposal;
 * once they carry the trust root's threshold of distinct keys, each is put into its node's key (if
 * still newer than what the mesh holds) and the proposal is done. The same key approving twice adds nothing.
 */
export async function approveCommand(ctx: CommandContext): Promise<number> {
  const id = ctx.args[0]!;
  const keyFile = stringFlag(ctx.flags, 'key');
  if (!keyFile) throw usageError("'approve' needs --key FILE (a control key other than the proposer's)");
  const seed = readSeed(keyFile);
  const nc = await connectWire(ctx);
  try {
    const trust = await syncTrust(nc, meshDirOf(ctx));
    if (!trust) throw refused('the mesh holds no trust root: nothing needs approving');
    requireControlKey(trust, keyFile, seed);
    const kv = await openProposals(nc);
    const { proposal, revision } = await readProposal(kv, id);
    const signer = publicKeyOfSeed(keyFile, seed);
    if (proposal.copies.every((c) => validSigners(trust, c.envelope).includes(signer))) throw refused(`${keyFile} (${signer}) has signed ${id} already: a key counts once; another control key must approve it`);
    const signed: Proposal = { ...proposal, copies: proposal.copies.map((c) => ({ ...c, envelope: cosign(c.envelope, seed) })) };
    const short = signed.copies.map((c) => validSigners(trust, c.envelope).length).filter((n) => n < needs(trust));
    if (short.length > 0) {
      try {
        await kv.update(id, JSON.stringify(signed), revision);
      } catch (err) {
        if (isRevisionConflict(err)) throw refused(`${id} changed while it was read (another approval?): run meshctl approve again`);
        throw err;
      }
      const have = Math.min(...signed.copies.map((c) => validSigners(trust, c.envelope).length));
      output(ctx, { id, signatures: have, needed: needs(trust), delivered: false }, () => `${id}: ${have} of ${needs(trust)} signatures; it waits for ${needs(trust) - have} more (meshctl approve ${id})`);
      return EXIT.ok;
    }
    // A rollout's copies go wave by wave: its record keeps them, and this meshctl drives it.
    if (signed.made === 'rollout') return await approveRollout(ctx, nc, signed, seed);
    const lines = await deliver(nc, signed);
    // Taken off the list only once every copy went: a copy refused stays proposed with the rest, named.
    if (lines.every((l) => l.sent)) await kv.delete(id);
    else await kv.update(id, JSON.stringify(signed), revision).catch(() => undefined);
    for (const line of lines) ctx.print(ctx.json ? JSON.stringify({ id, ...line }) : line.sent ? `${line.node}  sent     ${describeOrder(line.mark)} (revision ${line.revision}), approved by ${needs(trust)} keys` : `${line.node}  refused  ${line.reason}`);
    return lines.every((l) => l.sent) ? EXIT.ok : EXIT.failed;
  } finally {
    await nc.close();
  }
}

type Line = { node: string; sent: true; mark: Proposal['copies'][number]['mark']; revision: number } | { node: string; sent: false; reason: string };

/** Each approved copy put into its node's key as it was signed: still newer than what the mesh holds, or refused (propose again). */
async function deliver(nc: Parameters<typeof openDeclarations>[0], proposal: Proposal): Promise<Line[]> {
  const kv = await openDeclarations(nc);
  const lines: Line[] = [];
  for (const copy of proposal.copies) {
    try {
      const put = await putSigned(nc, kv, copy.node, copy, proposal.file);
      lines.push({ node: copy.node, sent: true, mark: put.mark, revision: put.revision });
    } catch (err) {
      lines.push({ node: copy.node, sent: false, reason: `${(err as Error).message}${(err as { details?: string[] }).details?.length ? `; ${(err as { details: string[] }).details.join('; ')}` : ''}` });
    }
  }
  return lines;
}

/** `meshctl proposals`: what waits for approval, one line each. */
export async function proposalsCommand(ctx: CommandContext): Promise<number> {
  const nc = await connectWire(ctx);
  try {
    const trust = await syncTrust(nc, meshDirOf(ctx));
    const proposals = await listProposals(await openProposals(nc));
    const rows = proposals.map((p) => ({ ...p, signatures: trust ? Math.min(...p.copies.map((c) => validSigners(trust, c.envelope).length)) : 0, needed: trust ? needs(trust) : 1 }));
    if (ctx.json) for (const r of rows) ctx.print(JSON.stringify({ id: r.id, file: r.file, nodes: r.copies.map((c) => c.node), proposedBy: r.proposedBy, proposedAt: r.proposedAt, signatures: r.signatures, needed: r.needed }));
    else if (rows.length === 0) ctx.print('no declaration waits for approval');
    else for (const r of rows) ctx.print(`${r.id}  ${r.file}  for ${r.copies.map((c) => `${c.node} (${describeOrder(c.mark)})`).join(', ')}  proposed ${r.proposedAt} by ${r.proposedBy}  ${r.signatures} of ${r.needed} signatures`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
