import { writeFileSync } from 'node:fs';
import { sign } from '../../declaration/envelope.js';
import { readDeclarationFile, receiveDeclaration } from '../../declaration/load.js';
import { EXIT, usageError } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { readSeed } from './keys.js';
import type { GenesisBundle } from '../../declaration/bundle.js';

/** `meshctl bundle FILE --key KEY [--node NODE] --server URL [--creds FILE] [--out FILE]`: a genesis bundle. */
export async function bundleCommand(ctx: CommandContext): Promise<number> {
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError("'bundle' needs --key FILE");
  const server = stringFlag(ctx.flags, 'server');
  if (!server) throw usageError("'bundle' needs --server URL (several: comma-separated)");
  const file = ctx.args[0]!;
  const bytes = readDeclarationFile(file);
  const { declaration } = await receiveDeclaration(bytes, { source: file, ...(stringFlag(ctx.flags, 'node') ? { node: stringFlag(ctx.flags, 'node')! } : {}) });
  const seed = readSeed(key);
  const envelope = await sign(bytes, seed);
  const creds = stringFlag(ctx.flags, 'creds');
  const bundle: GenesisBundle = {
    version: 1,
    node: declaration.node,
    link: { servers: server.split(',').map((s) => s.trim()).filter(Boolean), ...(creds ? { creds } : {}) },
    publicKey: envelope.key,
    declaration: envelope,
  };
  const text = `${JSON.stringify(bundle, null, 2)}\n`;
  const out = stringFlag(ctx.flags, 'out');
  if (out) writeFileSync(out, text, { mode: 0o600 });
  else ctx.print(text);
  return EXIT.ok;
}
