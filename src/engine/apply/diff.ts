import type { Plan as Planned } from '../converge/converge.js';
import type { RootedFs } from '../converge/rooted-fs.js';
import type { FileDiff } from '../report/report.js';

/** Larger files, and anything with a NUL byte, are not shown line by line: only their sizes. */
const MAX_DIFF_BYTES = 1 << 20;
const isText = (b: Buffer) => b.length < MAX_DIFF_BYTES && !b.includes(0);

/**
 * A unified diff of every file whose content the plan changes (`--diff`): what is there now against
 * what is declared. Read only when asked, after the check and before anything is touched. A file
 * marked sensitive never has its content shown: its entry says so and nothing more.
 */
export async function planDiffs(planned: Planned, fs: RootedFs): Promise<FileDiff[]> {
  const diffs: FileDiff[] = [];
  for (let i = 0; i < planned.resources.length; i++) {
    const resource = planned.resources[i]!;
    const step = planned.checks[i]!.step;
    if (resource.type !== 'file' || step === undefined) continue;
    if (!step.changes.some((c) => c.kind === 'create' || c.kind === 'content')) continue;
    const entry = { resource: resource.id, target: resource.path };
    if (resource.sensitive || typeof resource.content !== 'string') {
      diffs.push({ ...entry, diff: `${resource.path}: sensitive: would change` });
      continue;
    }
    const after = Buffer.from(resource.content, resource.encoding === 'base64' ? 'base64' : 'utf8');
    const st = fs.lstat(resource.path);
    const before = st?.isFile() ? fs.readFile(resource.path, st.size) : Buffer.alloc(0);
    if (!isText(before) || !isText(after)) {
      diffs.push({ ...entry, diff: `Binary content of ${resource.path} differs (${before.length} → ${after.length} bytes)` });
      continue;
    }
    const { createTwoFilesPatch } = await import('diff');
    const from = st?.isFile() ? `a${resource.path}` : '/dev/null';
    diffs.push({ ...entry, diff: createTwoFilesPatch(from, `b${resource.path}`, before.toString('utf8'), after.toString('utf8'), '', '', { context: 3 }).replace(/^=+\n/, '').trimEnd() });
  }
  return diffs;
}
