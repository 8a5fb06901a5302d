import type { ResourceRecord } from '../../core/store/state.js';
import type { ConvergeContext, Verified } from '../../engine/converge/handler-types.js';
import { foundVerdict, ownRecord } from '../../engine/converge/ownership.js';
import { decideDeclared, decideRemoval, giveBackVersion, type Decision, type Wanted } from './package-decide.js';
import type { Installed, PackageManager, Simulation } from './package-manager.js';
import type { PackageResource } from './package-spec.js';

/** What the one transaction did: why it failed (nothing when it did not), and every package it acted on as read back after. */
interface Transaction {
  failed?: string;
  after: Map<string, Installed>;
}

/**
 * One apply of packages, keyed by its context: the manager, one query of every package declared or let
 * go of, a decision for each, and the one transaction all their operations make, run at the first step
 * that acts and awaited by the others.
 */
export class PackageApply {
  readonly decisions = new Map<string, Decision>();
  private transaction: Promise<Transaction> | undefined;
  private after: Map<string, Installed> | undefined;
  /** The step that ran the transaction, and why the transaction failed: the second look says it on that step. */
  private ranBy: { resource: string; failed?: string } | undefined;

  constructor(readonly manager: PackageManager) {}

  /** The check's reads: one query of the database, the repositories asked only when a version is to be installed, the manager's simulation. */
  async read(resources: readonly PackageResource[], removing: readonly ResourceRecord[], ctx: ConvergeContext): Promise<void> {
    const found = await this.manager.installed([...new Set([...resources.map((r) => r.name), ...removing.map((r) => r.target)])]);
    const giveBack = removing.filter((record) => giveBackVersion(record, found.get(record.target)) !== undefined).map((r) => r.target);
    const decided = resources.map((resource) => decideDeclared(resource, found.get(resource.name), ownRecord(ctx, resource.id, 'package', resource.name), foundVerdict(resource, ctx)));
    const pinned = decided.flatMap((d) => (d.op && !('remove' in d.op) && d.op.version !== undefined ? [d.name] : []));
    const offered = giveBack.length + pinned.length > 0 ? await this.manager.offered([...new Set([...giveBack, ...pinned])]) : new Map<string, string[]>();
    for (const record of removing) this.decisions.set(record.id, decideRemoval(record, found.get(record.target), offered));
    for (const decision of decided) {
      const op = decision.op;
      if (op && !('remove' in op) && op.version !== undefined && !(offered.get(op.name) ?? []).includes(op.version)) {
        const versions = offered.get(op.name) ?? [];
        decision.problem = `version ${op.version} of ${op.name} is offered by no repository this machine reads (${versions.length > 0 ? `offered: ${versions.join(', ')}` : 'none offers the package'})`;
      }
      this.decisions.set(decision.resource, decision);
    }
    const acting = [...this.decisions.values()].filter((d) => d.op !== undefined);
    if (acting.length === 0 || acting.some((d) => d.problem !== undefined)) return;
    this.explain(acting, await this.manager.simulate(acting.map((d) => d.op!)));
  }

  /** The simulation's words on the steps: the version `present` gets, what else the transaction installs or removes, or why it fails. */
  private explain(acting: Decision[], simulation: Simulation): void {
    if (!simulation.ok) {
      for (const decision of acting) decision.problem = `the transaction fails in ${this.manager.tool}'s simulation: ${simulation.said}`;
      return;
    }
    const byName = new Map(simulation.actions.map((a) => [a.name, a]));
    for (const decision of acting) {
      const simulated = byName.get(decision.name);
      decision.changes = decision.changes.map((change) => (change.kind === 'package' && simulated && change.action === 'install' && change.to === undefined ? { ...change, to: simulated.to } : change));
    }
    const ours = new Set(acting.map((d) => d.name));
    const others = simulation.actions.filter((a) => !ours.has(a.name));
    const install = others.filter((a) => a.action !== 'remove').map((a) => `${a.name} ${a.to}`);
    const remove = others.filter((a) => a.action === 'remove').map((a) => `${a.name}${a.from ? ` ${a.from}` : ''}`);
    if (install.length + remove.length > 0) acting[0]!.changes.push({ kind: 'package-also', install, remove });
  }

  /** The one transaction, run once for every step that acts; the store keeps what it did, even when it failed part way. */
  run(ctx: ConvergeContext, resource: string): Promise<Transaction> {
    return (this.transaction ??= this.transact(ctx, resource));
  }

  private async transact(ctx: ConvergeContext, resource: string): Promise<Transaction> {
    const acting = [...this.decisions.values()].filter((d) => d.op !== undefined);
    const failed = await this.manager.transact(acting.map((d) => d.op!));
    this.ranBy = { resource, ...(failed !== undefined ? { failed } : {}) };
    // The second look: every package acted on, read back in one query.
    const after = await this.manager.installed(acting.map((d) => d.name));
    this.after = after;
    for (const decision of acting) this.keep(decision, ctx, after.get(decision.name));
    return { ...(failed !== undefined ? { failed } : {}), after };
  }

  /** What the store keeps of a package after the transaction: a removal's record goes only when it reached what it wanted. */
  private keep(decision: Decision, ctx: ConvergeContext, now: Installed | undefined): void {
    const reached = decision.wanted !== undefined && problemOf(decision.name, decision.wanted, now) === undefined;
    if (decision.keep === 'forget') {
      if (reached) ctx.store.forget(decision.resource);
      return;
    }
    this.record(decision, ctx);
  }

  /** The record of a declared package the host acted on or took. */
  record(decision: Decision, ctx: ConvergeContext): void {
    if (decision.keep === undefined || decision.keep === 'forget') return;
    ctx.store.record({ id: decision.resource, type: 'package', target: decision.name, origin: ctx.origin, created: decision.keep.found === null, package: decision.keep, appliedAt: ctx.now() });
  }

  /** The second look's verdict on every package the transaction acted on. */
  verify(): Verified | undefined {
    if (this.after === undefined) return undefined;
    const acting = [...this.decisions.values()].filter((d) => d.wanted !== undefined);
    const failures = acting.flatMap((d) => {
      const problem = problemOf(d.name, d.wanted!, this.after!.get(d.name));
      // The step that ran a failed transaction keeps the manager's words, with what the second look found.
      const failed = this.ranBy?.resource === d.resource ? this.ranBy.failed : undefined;
      if (failed !== undefined) return [{ resource: d.resource, message: problem ? `${failed}; at the second look, ${problem}` : failed }];
      return problem ? [{ resource: d.resource, message: problem }] : [];
    });
    return { failures, said: [`${acting.length} package${acting.length === 1 ? '' : 's'} read back from the package database at the second look`] };
  }
}

/** What is wrong with a package as read back, for what was wanted of it; nothing when it is as wanted. */
export function problemOf(name: string, wanted: Wanted, now: Installed | undefined): string | undefined {
  if (!wanted.installed) return now === undefined || now.state === 'absent' ? undefined : `package ${name} is still installed (${now.version}, ${now.status.trim()}) after its removal`;
  if (now === undefined || now.state === 'absent') return `package ${name} is not installed at the second look`;
  if (now.state === 'broken') return `package ${name} is not fully installed at the second look (dpkg says ${now.status.trim()} for ${now.version})`;
  if (wanted.version !== undefined && now.version !== wanted.version) return `package ${name} is at version ${now.version} at the second look, not ${wanted.version}`;
  return undefined;
}
