import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { systemRunner, type RunResult } from '../../src/core/system/runner.js';

/** The package root, found upwards from this file (the tests run from test/, the benchmarks from dist/test/). */
export const projectDir = ((): string => {
  for (const up of ['../../', '../../../']) {
    const dir = fileURLToPath(new URL(up, import.meta.url));
    if (existsSync(`${dir}package.json`) && existsSync(`${dir}bin/mesh-host`)) return dir;
  }
  throw new Error('the package root was not found');
})();

/** Runs a built program as an operator would; tests that need it rely on `npm run build` (the test script does it). */
export function runCli(program: 'mesh-host' | 'meshctl', args: string[], options: { timeoutMs?: number; input?: string; env?: Record<string, string> } = {}): Promise<RunResult> {
  return systemRunner().run(process.execPath, [`${projectDir}bin/${program}`, ...args], {
    timeoutMs: options.timeoutMs ?? 30_000,
    ...(options.input === undefined ? {} : { input: options.input }),
    // What the environment adds (SUDO_USER, say) over this process's own.
    ...(options.env === undefined ? {} : { env: { ...process.env, LC_ALL: 'C', ...options.env } }),
  });
}
