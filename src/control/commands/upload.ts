import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { putArchiveObject } from '../../kinds/archive/objects.js';
import { refused, usageError } from '../../core/system/errors.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { connectWire } from './mesh-flags.js';

const OBJECT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.+=@/-]{0,254}$/;

/** The file a put command uploads, the object name it goes under (--name, or the file's), and its size. */
export function uploadOf(ctx: CommandContext, what: string): { file: string; name: string; size: number } {
  const file = resolve(ctx.args[0]!);
  const name = stringFlag(ctx.flags, 'name') ?? basename(file);
  if (!OBJECT_NAME.test(name)) throw usageError(`'${name}' is not ${what} name (letters, digits and _.+=@/- , 255 at most, starting with a letter or digit)`);
  try {
    return { file, name, size: statSync(file).size };
  } catch (err) {
    throw refused(`${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

/** Uploads to the archive store, and refuses unless the store then holds exactly the file's bytes. */
export async function uploadChecked(ctx: CommandContext, upload: { file: string; name: string; size: number }, sha256: string): Promise<void> {
  const nc = await connectWire(ctx);
  try {
    const info = await putArchiveObject(nc, upload.name, upload.file);
    if (info.sha256 !== sha256 || info.size !== upload.size) {
      throw refused(`the store holds '${upload.name}' as ${info.size} bytes with sha256 ${info.sha256}, but ${upload.file} is ${upload.size} bytes with sha256 ${sha256}; upload again`);
    }
  } finally {
    await nc.close();
  }
}
