import { fchmod, fchown, fsync, lchown, link, lstat, mkdir, open, readFile, rename, rmdir, symlink, unlink, write } from 'node:fs';
import { promisify } from 'node:util';

// The batch's calls on libuv's threads, over plain descriptors and the rooted paths it pins (fs.promises
// would hand back FileHandles): each may wait on the file system's journal while other files flush.
export const fchmodAsync = promisify(fchmod);
export const fchownAsync = promisify(fchown);
export const fsyncAsync = promisify(fsync);
export const lchownAsync = promisify(lchown);
export const linkAsync = promisify(link);
export const lstatAsync = promisify(lstat);
export const mkdirAsync = promisify(mkdir);
export const openAsync = promisify(open);
export const readFileAsync = promisify(readFile);
export const renameAsync = promisify(rename);
export const rmdirAsync = promisify(rmdir);
export const symlinkAsync = promisify(symlink);
export const unlinkAsync = promisify(unlink);
export const writeAsync = promisify(write);
