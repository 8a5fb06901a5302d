import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { newOperatorKey, sign } from '../../core/declaration/envelope.js';
import { readDeclarationFile, receiveDeclaration } from '../../core/declaration/load.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { output, stringFlag, type CommandContext } from '../../cli/context.js';

export const SEED_FILE = 'operator.nk';
export const PUBLIC_FILE = 'operator.pub';

/** `meshctl keygen --out DIR`: an operator key pair; the seed 0600, never overwritten. */
export async function keygenCommand(ctx: CommandContext): Promise<number> {
  const out = stringFlag(ctx.flags, 'out');
  if (!out) throw usageError("'keygen' needs --out DIR");
  const dir = resolve(out);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const seedPath = join(dir, SEED_FILE);
  if (existsSync(seedPath)) throw refused(`${seedPath} exists; a key is never overwritten`);
  const key = await newOperatorKey();
  writeFileSync(seedPath, `${key.seed}\n`, { mode: 0o600, flag: 'wx' });
  writeFileSync(join(dir, PUBLIC_FILE), `${key.publicKey}\n`, { mode: 0o644, flag: 'wx' });
  output(ctx, { publicKey: key.publicKey, seed: seedPath, public: join(dir, PUBLIC_FILE) }, () => `public key ${key.publicKey}\nseed       ${seedPath} (keep it secret)\npublic     ${join(dir, PUBLIC_FILE)}`);
  return EXIT.ok;
}

export function readSeed(path: string): string {
  try {
    const seed = readFileSync(path, 'utf8').trim();
    if (!seed.startsWith('SO')) throw refused(`${path} is not an operator seed (SO…)`);
    return seed;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code) throw refused(`${path}: cannot be read (${(err as NodeJS.ErrnoException).code})`);
    throw err;
  }
}

/** `meshctl sign FILE --key KEY`: validates the declaration, then prints its envelope. */
export async function signCommand(ctx: CommandContext): Promise<number> {
  const key = stringFlag(ctx.flags, 'key');
  if (!key) throw usageError("'sign' needs --key FILE");
  const bytes = readDeclarationFile(ctx.args[0]!);
  // Refuse to sign what no host would accept: the same checks a host makes.
  await receiveDeclaration(bytes, { source: ctx.args[0]! });
  ctx.print(JSON.stringify(await sign(bytes, readSeed(key))));
  return EXIT.ok;
}
