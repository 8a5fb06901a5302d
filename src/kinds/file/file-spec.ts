import { kindSpec, type WordsOf } from '../../core/vocabulary/kind-spec.js';
import { isCanonicalBase64 } from '../../core/vocabulary/base64.js';
import { isSealed } from '../../core/vocabulary/sealed-value.js';
import type { Problem } from '../../core/vocabulary/problem.js';
import type { FileResource } from './file-schema.js';

export type { FileResource } from './file-schema.js';

/**
 * What the schema cannot say of a content: base64 that is not canonical; a sealed content (a secret)
 * on a file not said sensitive, or with an encoding (it carries the file's bytes as they are).
 */
function contentProblems(file: FileResource, at: string): Problem[] {
  if (isSealed(file.content)) {
    if (file.sensitive !== true) return [{ path: `${at}/sensitive`, message: 'a sealed content is a secret: the file must say "sensitive": true' }];
    if (file.encoding !== undefined) return [{ path: `${at}/encoding`, message: 'a sealed content holds the bytes of the file: no encoding applies' }];
    return [];
  }
  return file.encoding === 'base64' && !isCanonicalBase64(file.content) ? [{ path: `${at}/content`, message: 'not base64 (canonical, padded), as its encoding says' }] : [];
}

/** What a file's step changes beyond what every kind may: its content, and what stood in its name. */
export type FileChange =
  /** The content rewritten: lines added and removed for text, sizes otherwise, nothing for a sensitive file. */
  | { kind: 'content'; lines: { added: number; removed: number } }
  | { kind: 'content'; bytes: { from: number; to: number } }
  | { kind: 'content'; sensitive: true }
  /** A name planted as one of several links to the inode: the write replaces the name, never the inode. */
  | { kind: 'hard-link'; names: number }
  /** A symbolic link at a file the host wrote, replaced by the file. */
  | { kind: 'symlink-replaced' };

export const FILE_WORDS: WordsOf<FileChange> = {
  content: (change) => ('lines' in change ? `content (+${change.lines.added} −${change.lines.removed} lines)` : 'bytes' in change ? `content (${change.bytes.from}→${change.bytes.to} bytes)` : 'content (sensitive, not shown)'),
  'hard-link': (change) => `hard link (${change.names} names) replaced`,
  'symlink-replaced': () => 'symbolic link replaced by the file',
};

/**
 * What the store keeps of a file: what it looked like when the host last wrote or read it whole. When
 * lstat still says the same (inode, size, mtime, ctime: a write cannot keep ctime) and the declared
 * content hashes the same, the content is unchanged without reading it: the no-op apply is stat,
 * compare, move on.
 */
export interface SeenFile {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  /** sha256 (base64) of the content the host declared and found there. */
  digest: string;
}

export interface FileRecordFields {
  seen?: SeenFile;
}

export const fileSpec = kindSpec<FileResource, FileChange, FileRecordFields>({
  type: 'file',
  words: FILE_WORDS,
  place: { field: 'path', what: 'path', space: 'path' },
  atPath: {},
  rules: (file, at) => contentProblems(file, at),
});
