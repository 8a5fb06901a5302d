/**
 * Where an archive's symbolic links lead. A link is made only when its target, resolved from the
 * link's own directory over the archive's own entries, stays inside the target directory all the
 * way: not absolute, no '..' above the target at any step, and every link met on the way (another of
 * the archive's links) resolved in turn under the same rule, as the kernel would follow it. Each
 * directory passed through must be one the archive holds (a directory, or a link of the archive to
 * one): a name the archive does not hold could be anything on the machine, a link to '/' included.
 * Only the last component may name nothing (a link may dangle inside the target).
 */

/** What the resolution needs to know of a name of the archive. */
export type LinkLookup = (name: string) => { type: 'file' | 'dir' | 'symlink' | 'hardlink'; link?: string } | undefined;

/** As the kernel, which gives up after 40 links in one resolution. */
const MAX_HOPS = 40;
/** PATH_MAX less its NUL. */
const MAX_TARGET = 4095;

/** Why a link target may not be made at all, before it is resolved; undefined when it may. */
export function linkTargetProblem(target: string): string | undefined {
  if (target === '') return 'an empty target';
  if (target.startsWith('/')) return 'an absolute target';
  if (target.includes('\0')) return 'a NUL byte in the target';
  if (target.length > MAX_TARGET) return `a target over ${MAX_TARGET} characters`;
  if (target.split('/').some((part) => Buffer.byteLength(part) > 255)) return 'a target component over 255 bytes';
  return undefined;
}

const parts = (name: string) => (name === '' ? [] : name.split('/'));

/**
 * The name (relative to the target, '' for the target itself) a symbolic link of the archive leads
 * to, or why it may not be made.
 */
export function resolveLink(name: string, target: string, lookup: LinkLookup): { at: string } | { problem: string } {
  const hops = { count: 0 };
  try {
    return { at: walk(parts(name).slice(0, -1), target, lookup, hops).join('/') };
  } catch (err) {
    if (err instanceof Escape) return { problem: err.message };
    throw err;
  }
}

class Escape extends Error {}

function walk(base: string[], target: string, lookup: LinkLookup, hops: { count: number }): string[] {
  const problem = linkTargetProblem(target);
  if (problem) throw new Escape(problem);
  const steps = target.split('/').filter((part) => part !== '' && part !== '.');
  const stack = [...base];
  /** The last link this walk followed: where a '..' after it leads depends on it. */
  let via: string | undefined;
  steps.forEach((part, i) => {
    if (part === '..') {
      if (stack.length === 0) throw new Escape(`it leaves the target ('..' above it${via ? `, reached through the link '${via}'` : ''})`);
      stack.pop();
    } else {
      stack.push(part);
      const here = stack.join('/');
      const entry = lookup(here);
      if (entry?.type === 'symlink') {
        if (++hops.count > MAX_HOPS) throw new Escape(`more than ${MAX_HOPS} links on the way`);
        stack.pop();
        try {
          stack.splice(0, stack.length, ...walk(stack, entry.link ?? '', lookup, hops));
        } catch (err) {
          if (err instanceof Escape && !err.message.startsWith('through ')) throw new Escape(`through the link '${here}' (to '${entry.link}'): ${err.message}`);
          throw err;
        }
        via = here;
      }
    }
    // A directory passed through (not the last step) must be the target or one the archive holds.
    if (i < steps.length - 1 && stack.length > 0 && lookup(stack.join('/'))?.type !== 'dir') {
      throw new Escape(`'${stack.join('/')}' on its way is not a directory the archive holds`);
    }
  });
  return stack;
}
