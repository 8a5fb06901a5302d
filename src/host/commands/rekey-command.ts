import { join } from 'node:path';
import { newNkeySeed, nkeySeed } from '../../core/declaration/nkey.js';
import { writeDurably } from '../../core/system/durable.js';
import { EXIT, refused } from '../../core/system/errors.js';
import { HOST_KEY_FILE, readHostKey } from '../../engine/report/host-key.js';
import { signRekey } from '../../link/rekey.js';
import { readRekeyChain, REKEY_FILE } from '../daemon/host-signer.js';
import { output, type CommandContext } from '../../cli/context.js';
import { withHost } from './with-host.js';

/**
 * `mesh-host rekey`: a new node key for this host, in place of the one it has (a key that may have been
 * read by someone else). Under the host's lock, so no report is made meanwhile: the change is signed by
 * the old key and the new one, naming the last report the old key signed, and kept beside the key; then
 * the new key replaces the old (each written whole). A running daemon signs its next report with the
 * new key and carries the change with it; the control side, reading it, records the new key as the
 * node's and the old one as retired, and flags any report the old key signs after that.
 */
export async function rekeyCommand(ctx: CommandContext): Promise<number> {
  return withHost(ctx, 'rekey', async (host) => {
    const { stateDir } = host.paths;
    const old = readHostKey(stateDir);
    if (!old) throw refused(`${join(stateDir, HOST_KEY_FILE)}: this host has no key of its own yet (it is made at genesis); nothing to replace`, [], 'state');
    if (!host.config.node) throw refused('this host is not enrolled (its configuration names no node): nothing to rekey', [], 'state');
    const seed = newNkeySeed('node');
    const afterReport = host.store.state.reportSequence;
    const change = signRekey(host.config.node, old.seed, seed, ctx.clock.now().toISOString(), afterReport);
    // The change first: a crash before the key is replaced leaves the old key, and a change to a key
    // nobody holds, which is never sent (only a change to the key in use is).
    const chain = [...readRekeyChain(stateDir), change];
    writeDurably(join(stateDir, REKEY_FILE), Buffer.from(`${JSON.stringify(chain, null, 2)}\n`), 0o644);
    writeDurably(join(stateDir, HOST_KEY_FILE), Buffer.from(`${seed}\n`), 0o600);
    const publicKey = (nkeySeed(seed, 'node') as { publicKey: string }).publicKey;
    output(ctx, { node: host.config.node, key: publicKey, retired: old.publicKey, afterReport }, () =>
      [
        `${host.config.node}'s node key is now ${publicKey}; ${old.publicKey} is retired after report #${afterReport}`,
        'its next report is signed with the new key and carries the change, signed by both keys: the control side records it as it reads that report',
        '(a running daemon takes the new key at once, for its next report: its next apply or repair)',
      ].join('\n'),
    );
    return EXIT.ok;
  });
}
