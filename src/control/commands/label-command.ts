import { NODE_ID_PATTERN } from '../../core/declaration/ids.js';
import { describeLabels, parseLabel, type Labels } from '../fleet/labels.js';
import { Enrolments } from '../../link/enrolment.js';
import { EXIT, usageError } from '../../core/system/errors.js';
import { listFlag } from '../../cli/link-flags.js';
import type { CommandContext } from '../../cli/context.js';
import { connectControl } from '../../cli/link-flags.js';

/** `k=v` sets, `k-` removes: the changes an operator typed, or a usage error naming the bad one. */
export function labelChanges(texts: string[]): { set: Labels; remove: string[] } {
  const set: Labels = {};
  const remove: string[] = [];
  for (const text of texts) {
    if (/^[A-Za-z0-9][A-Za-z0-9_./-]{0,62}-$/.test(text)) {
      remove.push(text.slice(0, -1));
      continue;
    }
    const label = parseLabel(text);
    if (typeof label === 'string') throw usageError(label);
    set[label.key] = label.value;
  }
  return { set, remove };
}

/** The `--label k=v` flags of a command, as labels. */
export function labelFlags(ctx: CommandContext): Labels {
  const { set, remove } = labelChanges(listFlag(ctx.flags, 'label'));
  if (remove.length > 0) throw usageError(`--label ${remove[0]}-: a new key's labels can only be set`);
  return set;
}

/**
 * `meshctl label NODE k=v… [k-…]`: sets (or, with `k-`, removes) a node's labels in the mesh's record
 * of its key, which `--select` reads in status, send and plan.
 */
export async function labelCommand(ctx: CommandContext): Promise<number> {
  const [node, ...texts] = ctx.args as [string, ...string[]];
  if (!new RegExp(NODE_ID_PATTERN).test(node)) throw usageError(`'${node}' is not a node id ([A-Za-z0-9_-]{1,64})`);
  if (texts.length === 0) throw usageError("'label' needs at least one k=v (or k- to remove one)");
  const { set, remove } = labelChanges(texts);
  const nc = await connectControl(ctx);
  try {
    const enrolment = await (await Enrolments.open(nc)).label(node, set, remove);
    ctx.print(ctx.json ? JSON.stringify({ node, labels: enrolment.labels ?? {} }) : `${node}: ${describeLabels(enrolment.labels) || 'no labels'}`);
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
