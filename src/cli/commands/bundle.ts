import { writeFileSync } from 'node:fs';
import { sign } from '../../declaration/envelope.js';
import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { EXIT, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { readSeed } from './keys.js';
import type { GenesisBundle } from '../../declaration/bundle.js';
import { linkAuthFromFlags, serversFromFlag } from '../link-flags.js';

/** `meshctl bundle FILE --key KEY [--node NODE] --server URL [--creds|--nkey FILE] [--tls-* FILE] [--out FILE]`: a genesis bundle. */
export async function bundleCommand(ctx: CommandContext): Promise<number> {
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError("'bundle' needs --key FILE");
  const servers = serversFromFlag(ctx.flags);
  if (servers.length === 0) throw usageError("'bundle' needs --server URL (several: comma-separated)");
  const file = ctx.args[0]!;
  const bytes = readDeclarationFile(file);
  const { declaration } = await receiveDeclaration(bytes, { source: file, ...(stringFlag(ctx.flags, 'node') ? { node: stringFlag(ctx.flags, 'node')! } : {}) });
  const seed = readSeed(key);
  const envelope = await sign(bytes, seed);
  const bundle: GenesisBundle = {
    version: 1,
    node: declaration.node,
    // Paths as the host will find them: the bundle carries where its credentials are, never the secrets.
    link: { servers, ...linkAuthFromFlags(ctx.flags) },
    publicKey: envelope.key,
    declaration: envelope,
  };
  const text = `${JSON.stringify(bundle, null, 2)}\n`;
  const out = stringFlag(ctx.flags, 'out');
  if (out) writeFileSync(out, text, { mode: 0o600 });
  else ctx.print(text);
  return EXIT.ok;
}
