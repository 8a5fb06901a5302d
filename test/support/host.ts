import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyDeclaration, type ApplyRequest, type ApplyResult, type HostEnv } from '../../src/engine/apply/apply.js';
import { receiveDeclaration } from '../../src/core/declaration/load.js';
import type { Declaration, Resource } from '../../src/core/declaration/schema.js';
import { systemAccounts } from '../../src/engine/converge/unix-accounts.js';
import type { HandlerTable } from '../../src/engine/converge/converge.js';
import { BASE_HANDLERS } from '../../src/kinds/kind-handlers.js';
import { hostHandlers, type HandlerParts } from '../../src/host/env/host-environment.js';
import { Store } from '../../src/core/store/store.js';
import { systemClock } from '../../src/core/system/clock.js';
import { silentLogger, type Logger } from '../../src/core/system/log.js';
import { scratch } from './tree.js';

export interface TestHost {
  root: string;
  stateDir: string;
  env: HostEnv;
  /** Every kind's handler, over these parts (merged with those given before), in place of the env's table. */
  kinds(parts: Partial<HandlerParts>): void;
  /** Re-opens the store from disk, as a new process would. */
  reopen(): void;
  apply(declaration: Declaration, options?: Partial<Omit<ApplyRequest, 'received'>>): Promise<ApplyResult>;
  cleanup(): void;
}

export function declaration(resources: Resource[], extra: Partial<Declaration> = {}): Declaration {
  return { version: 1, node: 'test-node', mode: 'converged', sequence: 1, resources, ...extra };
}

/**
 * A scratch root and state directory, and the one apply path over them, in-process. `kinds`: every
 * kind's handler, as the host makes them, over these parts; else `handlers`, else files and directories.
 */
export function testHost(options: { log?: Logger; handlers?: HandlerTable; kinds?: Partial<HandlerParts>; dirs?: string[] } = {}): TestHost {
  const { dir, cleanup } = scratch();
  const root = join(dir, 'root');
  const stateDir = join(dir, 'state');
  for (const d of ['', ...(options.dirs ?? ['etc', 'srv'])]) mkdirSync(join(root, d), { recursive: true });
  const log = options.log ?? silentLogger();
  const env: HostEnv = {
    node: 'test-node',
    root,
    stateDir,
    store: Store.open(stateDir, log),
    log,
    clock: systemClock,
    accounts: systemAccounts(),
    handlers: options.handlers ?? BASE_HANDLERS,
  };
  let parts: Partial<HandlerParts> = {};
  const kinds = (more: Partial<HandlerParts>) => {
    parts = { ...parts, ...more };
    env.handlers = hostHandlers({ node: env.node, stateDir, clock: env.clock, ...parts });
  };
  if (options.kinds) kinds(options.kinds);
  return {
    root,
    stateDir,
    env,
    kinds,
    reopen() {
      env.store = Store.open(stateDir, log);
    },
    async apply(decl, request = {}) {
      const bytes = Buffer.from(JSON.stringify(decl));
      return applyDeclaration(env, {
        received: await receiveDeclaration(bytes, { source: 'test' }),
        origin: 'local',
        trigger: 'apply',
        dryRun: false,
        mayChangeMode: false,
        ...request,
      });
    },
    cleanup,
  };
}

export function put(root: string, path: string, content: string, mode = 0o644): void {
  writeFileSync(join(root, path), content, { mode });
}

export function reportOf(result: ApplyResult) {
  if (result.kind !== 'applied') throw new Error(`expected an applied result, got ${result.kind}: ${JSON.stringify(result)}`);
  return result.report;
}
