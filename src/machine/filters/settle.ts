import type { Mode } from '../../core/declaration/schema.js';
import type { ManagerChoice } from '../services/choose.js';
import type { ServiceManager } from '../services/manager.js';
import type { Store } from '../../core/store/store.js';
import type { FoundFirewallRecord, StoreState } from '../../core/store/state.js';
import type { Clock } from '../../core/system/clock.js';
import type { Logger } from '../../core/system/log.js';
import type { CommandRunner } from '../../core/system/runner.js';
import { decide, type Decision } from './decide.js';
import { lookAtFoundFirewalls, type Look } from './found.js';
import { DEFAULT_MESH_PREFIX, filtersNotRead, readFilters } from './filter-read.js';
import { retirementSteps } from './steps.js';
import type { FilterEntry, FoundFirewall } from './filter-types.js';

/** What the host needs to read the machine's filters and retire its found firewall. */
export interface FirewallEnv {
  runner: CommandRunner;
  /** The prefix of the mesh's own tables (default `mesh`). */
  meshPrefix?: string;
  /** Set when this apply is not the machine's (a scratch --root): nothing is read or retired, and that is said. */
  notHere?: string;
}

export interface SettleInput {
  firewall: FirewallEnv;
  store: Store;
  clock: Clock;
  log: Logger;
  serviceManager?: () => Promise<ManagerChoice>;
  mode: Mode;
  /** Whether the apply converged: only then is anything retired. */
  converged: boolean;
  /** Awaited before anything is retired (the apply's kept declaration made durable); a rejection retires nothing. */
  beforeTouch?: () => Promise<void>;
}

export interface Settled {
  said: string[];
  /** A retirement that failed: the machine is not what the mesh composed. */
  failure?: string;
  filters: FilterEntry[];
  foundFirewall: FoundFirewall | null;
}

/**
 * After an apply: looks at the found firewalls, retires them on a converged machine after a converged
 * apply (keeping that in the store, saved before and after each step so that a retirement cut short
 * is finished at the next apply), and reads the filters as they stand then — what the report carries.
 */
export async function settleFoundFirewall(input: SettleInput): Promise<Settled> {
  const { firewall, store } = input;
  if (firewall.notHere) return { said: [], filters: filtersNotRead(firewall.notHere), foundFirewall: { tools: [], notRead: firewall.notHere } };
  const manager = await managerOf(input);
  const [looks, filters] = await Promise.all([lookAtFoundFirewalls(firewall.runner, manager), readFilters(firewall.runner, { meshPrefix: firewall.meshPrefix ?? DEFAULT_MESH_PREFIX })]);
  const said: string[] = [];
  const failures: string[] = [];
  let retired = false;
  for (const look of looks) {
    const record = store.state.foundFirewall?.[look.tool];
    const decision = decide(look, record, input.mode, input.converged);
    if (decision.act === 'none') continue;
    if (decision.act === 'record-inactive') {
      setRecord(store, look.tool, { status: 'found-inactive', since: now(input) });
      said.push(`found firewall ${look.tool} is inactive (${look.reason}): recorded as found inactive, not as the mesh's doing`);
    } else if (decision.act === 'leave') {
      said.push(leaveLine(look, decision));
    } else {
      retired = true;
      const outcome = await retire(input, look, record, manager, decision.because);
      said.push(outcome.said);
      if (outcome.failure) failures.push(outcome.failure);
    }
  }
  if (!retired) return { said, ...(failures.length ? { failure: failures.join('; ') } : {}), filters: filters.filters, foundFirewall: factOf(looks, store) };
  // What the report carries is the machine after the retirement.
  const [after, filtersAfter] = await Promise.all([lookAtFoundFirewalls(firewall.runner, manager), readFilters(firewall.runner, { meshPrefix: firewall.meshPrefix ?? DEFAULT_MESH_PREFIX })]);
  return { said, ...(failures.length ? { failure: failures.join('; ') } : {}), filters: filtersAfter.filters, foundFirewall: factOf(after, store) };
}

async function managerOf(input: SettleInput): Promise<ServiceManager | undefined> {
  return input.serviceManager ? (await input.serviceManager()).manager : undefined;
}

const now = (input: Pick<SettleInput, 'clock'>) => input.clock.now().toISOString();

function setRecord(store: Store, tool: Look['tool'], record: FoundFirewallRecord): void {
  store.updateHead((state) => {
    state.foundFirewall = { ...state.foundFirewall, [tool]: record };
  });
}

function leaveLine(look: Look, decision: Extract<Decision, { act: 'leave' }>): string {
  switch (decision.because) {
    case 'adopted':
      return `found firewall ${look.tool} is ${look.state}: left alone (an adopted machine's found firewall is only reported)`;
    case 'apply-failed':
      return `found firewall ${look.tool} is ${look.state} and was not retired: the apply failed, so the mesh's own filter may not be in place`;
    case 'unknown':
      return `found firewall ${look.tool}: its state is unknown (${look.reason}; asked with ${look.method}), so it was not retired`;
  }
}

const BECAUSE: Record<Extract<Decision, { act: 'retire' }>['because'], (tool: string, record?: FoundFirewallRecord) => string> = {
  'found-active': (tool) => `found firewall ${tool} was active`,
  'enabled-again': (tool, r) => `found firewall ${tool} was enabled again since the mesh retired it at ${r?.since}`,
  'active-since-found-inactive': (tool, r) => `found firewall ${tool}, found inactive at ${r?.since}, was enabled since`,
  unfinished: (tool, r) => `the retirement of found firewall ${tool}, begun at ${r?.since} and not finished${r?.stepsDone?.length ? ` (done: ${r.stepsDone.join(', ')})` : ''}, was finished`,
};

/**
 * Retires one found firewall: `retiring` is saved before the first step and after each, so a crash
 * between steps leaves a record that the next apply finishes; `retired` is saved with the apply.
 */
async function retire(
  input: SettleInput,
  look: Look,
  record: FoundFirewallRecord | undefined,
  manager: ServiceManager | undefined,
  because: Extract<Decision, { act: 'retire' }>['because'],
): Promise<{ said: string; failure?: string }> {
  const { store, log } = input;
  const why = BECAUSE[because](look.tool, record);
  const steps = retirementSteps(look.tool, input.firewall.runner, manager);
  if ('cannot' in steps) {
    const message = `${why}, and cannot be retired: ${steps.cannot}`;
    return { said: message, failure: message };
  }
  const begun = because === 'unfinished' && record ? record.since : now(input);
  const retiring = (stepsDone: string[]): FoundFirewallRecord => ({ status: 'retiring', since: begun, stepsDone, retirements: record?.retirements ?? 0 });
  const done: string[] = [];
  try {
    await input.beforeTouch?.();
    setRecord(store, look.tool, retiring(done));
    store.save();
    for (const step of steps) {
      log.info({ tool: look.tool, step: step.name }, `found firewall ${look.tool}: ${step.name}`);
      await step.run();
      done.push(step.name);
      setRecord(store, look.tool, retiring([...done]));
      store.save();
    }
  } catch (err) {
    const message = `${why}; retiring it failed${done.length ? ` after ${done.join(', ')}` : ''}: ${(err as Error).message}; it is finished at the next apply`;
    return { said: message, failure: message };
  }
  setRecord(store, look.tool, { status: 'retired', since: now(input), retirements: (record?.retirements ?? 0) + 1 });
  return { said: `${why}: retired (${done.join(', ')}); it stays off across boots` };
}

/** The report's fact: each found firewall as seen, with what the store keeps of it. */
export function factOf(looks: readonly Look[], store: { state: Pick<StoreState, 'foundFirewall'> }): FoundFirewall | null {
  if (looks.length === 0) return null;
  return {
    tools: looks.map((look) => {
      const record = store.state.foundFirewall?.[look.tool];
      return { ...look, ...(record ? { recorded: record.status, since: record.since } : {}) };
    }),
  };
}
