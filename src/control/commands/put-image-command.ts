import { sha256OfFile } from '../../kinds/archive/digest.js';
import { readImageArchive } from '../../kinds/container/image-archive.js';
import { ARCHIVES_BUCKET } from '../../link/wire.js';
import { EXIT, refused } from '../../core/system/errors.js';
import { output, type CommandContext } from '../../cli/context.js';
import { uploadChecked, uploadOf } from './upload.js';

/**
 * `meshctl put-image FILE [--name NAME]`: checks that FILE is an image archive an engine loads (a
 * `docker save` or `podman save`), uploads it to the bucket mesh_archives, and prints the container's
 * `image` field to paste. Hosts stream it from there, check its sha256 and load it: no registry.
 */
export async function putImageCommand(ctx: CommandContext): Promise<number> {
  const upload = uploadOf(ctx, 'an object');
  const { file, name, size } = upload;
  const read = await readImageArchive(file);
  if ('problem' in read) throw refused(`${file} is not an image archive: ${read.problem}; nothing was uploaded`);
  const sha256 = await sha256OfFile(file);
  await uploadChecked(ctx, upload, sha256);
  const image = { object: name, sha256 };
  output(ctx, { name, size, sha256, bucket: ARCHIVES_BUCKET, tags: read.tags, image }, () =>
    [`uploaded ${name} (${size} bytes, sha256 ${sha256}${read.tags.length ? `, ${read.tags.join(', ')}` : ''}) to ${ARCHIVES_BUCKET}`, 'the image field to paste into a container:', JSON.stringify({ image })].join('\n'),
  );
  return EXIT.ok;
}
