import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { sha256OfFile } from '../../archive/digest.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../../config/archive-limits.js';
import { putArchiveObject } from '../../archive/objects.js';
import { readArchive } from '../../archive/read.js';
import { ArchiveRefused } from '../../archive/refusal.js';
import { ARCHIVES_BUCKET } from '../../link/wire.js';
import { EXIT, refused, usageError } from '../../system/errors.js';
import { output, stringFlag, type CommandContext } from '../context.js';
import { connectWire } from './mesh.js';

const OBJECT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.+=@/-]{0,254}$/;

/** A resource id from an object name ('nats-2.10.tgz' → 'nats-2.10'). */
const idOf = (name: string) => basename(name).replace(/\.(tar\.gz|tgz|tar)$/, '').replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 128) || 'archive';

/**
 * `meshctl put-archive FILE [--name NAME]`: reads the archive as every host will (an archive hosts
 * would refuse is refused here, before it is uploaded), uploads it to the bucket mesh_archives, and
 * prints the resource to paste into a declaration (its path is the operator's to choose).
 */
export async function putArchiveCommand(ctx: CommandContext): Promise<number> {
  const file = resolve(ctx.args[0]!);
  const name = stringFlag(ctx.flags, 'name') ?? basename(file);
  if (!OBJECT_NAME.test(name)) throw usageError(`'${name}' is not an archive name (letters, digits and _.+=@/- , 255 at most, starting with a letter or digit)`);
  let size: number;
  try {
    size = statSync(file).size;
  } catch (err) {
    throw refused(`${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const sha256 = await sha256OfFile(file);
  try {
    await readArchive({ kind: 'file', path: file }, DEFAULT_ARCHIVE_LIMITS);
  } catch (err) {
    if (err instanceof ArchiveRefused) throw refused(`${file}: hosts would refuse this archive: ${err.message}; nothing was uploaded`);
    throw err;
  }
  const nc = await connectWire(ctx);
  try {
    const info = await putArchiveObject(nc, name, file);
    if (info.sha256 !== sha256 || info.size !== size) {
      throw refused(`the store holds '${name}' as ${info.size} bytes with sha256 ${info.sha256}, but ${file} is ${size} bytes with sha256 ${sha256}; upload again`);
    }
  } finally {
    await nc.close();
  }
  const resource = { type: 'archive', id: idOf(name), path: '/CHOOSE/A/TARGET', sha256, source: { object: name } };
  output(ctx, { name, size, sha256, bucket: ARCHIVES_BUCKET, resource }, () =>
    [`uploaded ${name} (${size} bytes, sha256 ${sha256}) to ${ARCHIVES_BUCKET}`, 'the resource to paste (set its path):', JSON.stringify(resource)].join('\n'),
  );
  return EXIT.ok;
}
