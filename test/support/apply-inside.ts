import { afterAll, beforeAll } from 'vitest';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Resource } from '../../src/core/declaration/schema.js';
import type { Report } from '../../src/engine/report/report.js';
import { projectDir } from './cli.js';
import type { SystemdContainer } from './systemd-container.js';
import { scratch } from './tree.js';

export interface ApplyInside {
  readonly container: SystemdContainer;
  /** The block's scratch folder, bound into the container at the same path (state directories go there). */
  readonly work: string;
  /** One `mesh-host apply --root /` inside the container, converging its root, with a state directory of its own unless one is given. */
  apply(resources: Resource[], options?: { state?: string; sequence?: number }): Promise<{ code: number | null; report: Report; stderr: string }>;
}

export interface ApplyInsideOptions {
  /** Starts the container with the project and the scratch folder bound in. */
  start(binds: string[]): Promise<SystemdContainer>;
  /** The host's configuration besides its node name and a verify pause long enough to see a death. */
  config?: object;
  /** Resources every declaration begins with. */
  first?: Resource[];
}

/**
 * A service manager's container for the describe block it is called in, with mesh-host applying
 * declarations inside it: the project and a scratch folder bound in, both ended after the block.
 */
export function useApplyInside(name: string, options: ApplyInsideOptions): ApplyInside {
  let container: SystemdContainer | undefined;
  let work: ReturnType<typeof scratch> | undefined;
  let n = 0;
  beforeAll(async () => {
    work = scratch(`mesh-host-${name}-`);
    container = await options.start([projectDir.replace(/\/$/, ''), work.dir]);
  }, 900_000);
  afterAll(async () => {
    await container?.stop();
    work?.cleanup();
  });
  const made = () => {
    if (!container || !work) throw new Error("the container is started in the block's beforeAll; use it inside a test");
    return { container, work: work.dir };
  };
  return {
    get container() {
      return made().container;
    },
    get work() {
      return made().work;
    },
    async apply(resources, { state, sequence = 1 } = {}) {
      const dir = join(made().work, `case-${++n}`);
      mkdirSync(dir, { recursive: true });
      const decl = join(dir, 'decl.json');
      writeFileSync(decl, JSON.stringify({ version: 1, node: name, mode: 'converged', sequence, resources: [...(options.first ?? []), ...resources] }));
      const config = join(dir, 'host.json');
      writeFileSync(config, JSON.stringify({ node: name, verifyPauseMs: 1500, ...options.config }));
      const args = [join(projectDir, 'bin/mesh-host'), 'apply', decl, '--json', '--root', '/', '--state-dir', state ?? join(dir, 'state'), '--config', config, '--log-level', 'warn'];
      const result = await made().container.exec(process.execPath, args, 60_000);
      try {
        return { code: result.code, report: (JSON.parse(result.stdout) as { report: Report }).report, stderr: result.stderr };
      } catch {
        throw new Error(`mesh-host apply printed no report (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
      }
    },
  };
}
