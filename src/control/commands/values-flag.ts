import { stringFlag, type CommandContext } from '../../cli/context.js';
import { EMPTY_VALUES, readNodeValues, type NodeValues } from '../fleet/node-values.js';

/** The per-node values of `--values FILE` (the mesh directory's values.json when it has one), or none. */
export function valuesFlag(ctx: CommandContext): NodeValues {
  const path = stringFlag(ctx.flags, 'values');
  return path === undefined ? EMPTY_VALUES : readNodeValues(path, true);
}
