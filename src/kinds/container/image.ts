import type { ContainerResource } from '../../core/declaration/schema.js';
import { obtainArchive, type ArchiveEnv } from '../archive/obtain.js';
import type { ContainerEngine } from './engine.js';
import type { Change } from '../../engine/converge/changes.js';

/** The name a loaded image archive is tagged with: its archive's digest, so a second apply finds it loaded. */
export const objectImage = (sha256: string) => `localhost/mesh-host-image:${sha256}`;

/** What the engine knows the declared image by. */
export const engineImage = (image: ContainerResource['image']) => ('ref' in image ? image.ref : objectImage(image.sha256));

/** The plan's change that brings the image in, or undefined when the engine has it. */
export async function imageAction(engine: ContainerEngine, image: ContainerResource['image']): Promise<Change | undefined> {
  if (await engine.hasImage(engineImage(image))) return undefined;
  return 'ref' in image ? { kind: 'pull', ref: image.ref } : { kind: 'load', object: image.object };
}

/**
 * Brings the declared image into the engine when it has not got it: pulled by its digest, or streamed
 * from the mesh's archive store into the state directory, its sha256 checked there, and only then
 * loaded (the engine never sees a byte of an archive that does not match).
 */
export async function ensureImage(engine: ContainerEngine, image: ContainerResource['image'], archives: ArchiveEnv): Promise<void> {
  const name = engineImage(image);
  if (await engine.hasImage(name)) return;
  if ('ref' in image) return engine.pull(image.ref);
  const obtained = (await obtainArchive(archives, { object: image.object }, image.sha256, true))!;
  try {
    if (obtained.bytes.kind !== 'file') throw new Error(`image object '${image.object}' did not come as a file`);
    const loaded = await engine.load(obtained.bytes.path);
    if (loaded.length === 0) throw new Error(`the engine loaded object '${image.object}' but named no image it made`);
    const [repo, tag] = [name.slice(0, name.lastIndexOf(':')), image.sha256];
    await engine.tag(loaded[0]!, repo, tag);
  } finally {
    // The engine keeps the image; a copy of the archive would only take room.
    obtained.settle(false);
  }
}
