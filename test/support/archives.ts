import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { ArchiveObjects } from '../../src/kinds/archive/objects.js';

/** GNU tar, run as an operator would; throws with its stderr when it fails. */
export function gnuTar(args: string[], cwd?: string): void {
  const r = spawnSync('tar', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`tar ${args.join(' ')}: ${r.stderr}`);
}

/** An entry for Python's tarfile: what GNU tar will not make (absolute names, '..', devices, links to anywhere). */
export interface PyEntry {
  name: string;
  type?: 'file' | 'dir' | 'symlink' | 'hardlink' | 'chr' | 'blk' | 'fifo';
  data?: string;
  mode?: number;
  linkname?: string;
  uid?: number;
  /** Declared size, when it should differ from the data's (a bomb's header). */
  size?: number;
  /** pax extended header records, which override the ustar fields they name (path, linkpath). */
  pax?: Record<string, string>;
}

const PY = `
import io, json, sys, tarfile
spec = json.loads(sys.argv[1])
fmt = {'gnu': tarfile.GNU_FORMAT, 'pax': tarfile.PAX_FORMAT, 'ustar': tarfile.USTAR_FORMAT}[spec['format']]
t = tarfile.open(spec['out'], 'w:gz' if spec['gzip'] else 'w', format=fmt)
types = {'file': tarfile.REGTYPE, 'dir': tarfile.DIRTYPE, 'symlink': tarfile.SYMTYPE, 'hardlink': tarfile.LNKTYPE, 'chr': tarfile.CHRTYPE, 'blk': tarfile.BLKTYPE, 'fifo': tarfile.FIFOTYPE}
for e in spec['entries']:
    i = tarfile.TarInfo(e['name'])
    i.type = types[e.get('type', 'file')]
    i.mode = e.get('mode', 0o755 if i.type == tarfile.DIRTYPE else 0o644)
    i.uid = e.get('uid', 0)
    if 'linkname' in e: i.linkname = e['linkname']
    if 'pax' in e: i.pax_headers = e['pax']
    data = e.get('data', '').encode()
    if i.type == tarfile.REGTYPE:
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)
t.close()
`;

/** Writes an archive with Python's tarfile. */
export function pyTar(out: string, entries: PyEntry[], options: { format?: 'gnu' | 'pax' | 'ustar'; gzip?: boolean } = {}): void {
  const r = spawnSync('python3', ['-c', PY, JSON.stringify({ out, entries, format: options.format ?? 'pax', gzip: options.gzip ?? true })], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 tarfile: ${r.stderr}`);
}

export const sha256Of = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

/** An archive resource with its bytes inline. */
export function inlineArchive(id: string, path: string, file: string, extra: object = {}) {
  return { type: 'archive' as const, id, path, sha256: sha256Of(file), source: { inline: readFileSync(file).toString('base64') }, ...extra };
}

/**
 * An archive store in memory, for the fast tests beside the real one (test/archive/objects.test.ts
 * runs the NATS Object Store): objects by name, read in chunks.
 */
export function memoryObjects(objects: Map<string, Buffer>): ArchiveObjects {
  return {
    async info(name) {
      const bytes = objects.get(name);
      return bytes ? { name, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') } : undefined;
    },
    async read(name) {
      const bytes = objects.get(name);
      if (!bytes) return undefined;
      return (async function* () {
        for (let at = 0; at < bytes.length; at += 64 * 1024) yield bytes.subarray(at, at + 64 * 1024);
      })();
    },
  };
}
