// The version and commit a build carries (`--version` prints them): the package's version unless one is
// given, and the checkout's commit, marked `-dirty` when tracked files differ from it.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { URL } from 'node:url';

function git(args) {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

export function buildInfo(version) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const head = git(['rev-parse', 'HEAD']);
  const dirty = head !== undefined && git(['status', '--porcelain', '--untracked-files=no']) !== '';
  return { version: version ?? pkg.version, commit: head === undefined ? 'unknown' : `${head}${dirty ? '-dirty' : ''}` };
}

/** When the commit was made (for reproducible archives), or now outside a checkout. */
export function commitTime() {
  const seconds = git(['log', '-1', '--format=%ct']);
  return seconds ? Number(seconds) : Math.floor(Date.now() / 1000);
}
