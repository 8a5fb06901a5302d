import type { CommandRunner } from '../../core/system/runner.js';
import type { ConvergeContext, Verified } from '../../engine/converge/handler-types.js';
import { accountTools, type AccountTools } from './account-tools.js';
import type { AccountTables } from './account-tables.js';

/**
 * What one apply of accounts holds, keyed by its context: the tools, the tables read once before the
 * check, the ids the plan promised (so that the apply gives the same), and what it acted on, for the
 * second look.
 */
export interface AccountApply {
  tools: AccountTools;
  tables: AccountTables;
  promised: Map<string, number>;
  taken: Set<number>;
  /** Each account acted on: what the second look must find (its id), or that it is gone. */
  acted: Map<string, { resource: string; id?: number; gone?: true }>;
}

/** One apply's state of a kind of account, made by its prepare and read by its converge, remove and verify. */
export function accountApplies(runner: CommandRunner | undefined, what: string) {
  const applies = new WeakMap<ConvergeContext, AccountApply>();
  return {
    async prepare(ctx: ConvergeContext): Promise<string | undefined> {
      if (!runner) return `no command runner is provided to run the machine's ${what} tools with`;
      const tools = accountTools(runner, ctx.fs.root);
      applies.set(ctx, { tools, tables: await tools.read(), promised: new Map(), taken: new Set(), acted: new Map() });
      return undefined;
    },
    of(ctx: ConvergeContext): AccountApply {
      const apply = applies.get(ctx);
      if (!apply) throw new Error(`the ${what} tables were not read for this apply`);
      return apply;
    },
    /** The second look: every account acted on read back through the tables as the machine answers them now. */
    async verify(ctx: ConvergeContext, table: (tables: AccountTables) => ReadonlyMap<string, { gid?: number; uid?: number }>, idOf: (entry: { gid?: number; uid?: number }) => number | undefined): Promise<Verified | undefined> {
      const apply = applies.get(ctx);
      if (!apply || apply.acted.size === 0) return undefined;
      const now = table(await apply.tools.read());
      const failures: Verified['failures'] = [];
      for (const [name, want] of apply.acted) {
        const entry = now.get(name);
        if (want.gone && entry) failures.push({ resource: want.resource, message: `${what} ${name} is still there after its removal` });
        else if (!want.gone && !entry) failures.push({ resource: want.resource, message: `${what} ${name} is not there at the second look` });
        else if (!want.gone && entry && want.id !== undefined && idOf(entry) !== want.id) failures.push({ resource: want.resource, message: `${what} ${name} has id ${idOf(entry)} at the second look, not ${want.id}` });
      }
      return { failures, said: [`${apply.acted.size} ${what}${apply.acted.size === 1 ? '' : 's'} read back at the second look`] };
    },
  };
}
