import { basename } from 'node:path';
import { sha256OfFile } from '../../kinds/archive/digest.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../../core/config/archive-limits.js';
import { readArchive } from '../../kinds/archive/archive-read.js';
import { ArchiveRefused } from '../../kinds/archive/refusal.js';
import { ARCHIVES_BUCKET } from '../../link/wire.js';
import { EXIT, refused } from '../../core/system/errors.js';
import { output, type CommandContext } from '../../cli/context.js';
import { uploadChecked, uploadOf } from './upload.js';

/** A resource id from an object name ('nats-2.10.tgz' → 'nats-2.10'). */
const idOf = (name: string) => basename(name).replace(/\.(tar\.gz|tgz|tar)$/, '').replace(/[^A-Za-z0-9_.-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 128) || 'archive';

/**
 * `meshctl put-archive FILE [--name NAME]`: reads the archive as every host will, with the host's own
 * reader and limits (an archive hosts would refuse is refused here in the host's words, before it is
 * uploaded; links are checked over the archive alone, so the answer is the host's), uploads it to the bucket mesh_archives, and
 * prints the resource to paste into a declaration (its path is the operator's to choose).
 */
export async function putArchiveCommand(ctx: CommandContext): Promise<number> {
  const upload = uploadOf(ctx, 'an archive');
  const { file, name, size } = upload;
  const sha256 = await sha256OfFile(file);
  try {
    await readArchive({ kind: 'file', path: file }, DEFAULT_ARCHIVE_LIMITS);
  } catch (err) {
    if (err instanceof ArchiveRefused) throw refused(`${file}: hosts would refuse this archive: ${err.message}; nothing was uploaded`, [], 'invalid', [err.subject]);
    throw err;
  }
  await uploadChecked(ctx, upload, sha256);
  const resource = { type: 'archive', id: idOf(name), path: '/CHOOSE/A/TARGET', sha256, source: { object: name } };
  output(ctx, { name, size, sha256, bucket: ARCHIVES_BUCKET, resource }, () =>
    [`uploaded ${name} (${size} bytes, sha256 ${sha256}) to ${ARCHIVES_BUCKET}`, 'the resource to paste (set its path):', JSON.stringify(resource)].join('\n'),
  );
  return EXIT.ok;
}
