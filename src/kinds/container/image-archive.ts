import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { Parser, type ReadEntry } from 'tar';

/** The most a manifest.json is read to (a real one is a few hundred bytes a image). */
const MANIFEST_LIMIT = 1024 * 1024;

interface ManifestItem {
  Config?: unknown;
  Layers?: unknown;
  RepoTags?: unknown;
}

/**
 * Why a file is not an image archive an engine loads (`docker save`, `podman save`: a tar, gzipped or
 * not, whose manifest.json lists each image's config and layers, every one of them in the archive), or
 * undefined when it is one. Also the image names it carries.
 */
export async function readImageArchive(file: string): Promise<{ problem: string } | { tags: string[] }> {
  const names = new Set<string>();
  let manifest: Buffer | undefined;
  let tooBig = false;
  const parser = new Parser({ strict: true });
  parser.on('entry', (e: ReadEntry) => {
    const name = e.path.replace(/^\.\//, '');
    names.add(name);
    if (name !== 'manifest.json') return e.resume();
    if (e.size > MANIFEST_LIMIT) {
      tooBig = true;
      return e.resume();
    }
    const parts: Buffer[] = [];
    e.on('data', (chunk: Buffer) => parts.push(chunk));
    e.on('end', () => (manifest = Buffer.concat(parts)));
  });
  try {
    await pipeline(createReadStream(file), parser);
  } catch (err) {
    return { problem: `it is not a tar archive (${(err as Error).message})` };
  }
  if (tooBig) return { problem: `its manifest.json is over ${MANIFEST_LIMIT} bytes` };
  if (!manifest) return { problem: `it has no manifest.json: not an image archive as docker save or podman save (--format docker-archive) makes` };
  return manifestProblems(manifest, names);
}

function manifestProblems(bytes: Buffer, names: Set<string>): { problem: string } | { tags: string[] } {
  let items: ManifestItem[];
  try {
    items = JSON.parse(bytes.toString('utf8')) as ManifestItem[];
  } catch (err) {
    return { problem: `its manifest.json is not JSON (${(err as Error).message})` };
  }
  if (!Array.isArray(items) || items.length === 0) return { problem: 'its manifest.json lists no image' };
  const tags: string[] = [];
  for (const [i, item] of items.entries()) {
    if (typeof item?.Config !== 'string' || !Array.isArray(item.Layers) || !item.Layers.every((l) => typeof l === 'string')) {
      return { problem: `its manifest.json's image ${i} names no config and layers` };
    }
    const missing = [item.Config, ...(item.Layers as string[])].find((path) => !names.has(path.replace(/^\.\//, '')));
    if (missing) return { problem: `its manifest.json names ${missing}, which the archive does not hold` };
    if (Array.isArray(item.RepoTags)) tags.push(...item.RepoTags.filter((t): t is string => typeof t === 'string'));
  }
  return { tags };
}
