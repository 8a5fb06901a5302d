import { fileURLToPath } from 'node:url';
import { systemRunner, type RunResult } from '../../src/system/runner.js';

export const projectDir = fileURLToPath(new URL('../../', import.meta.url));

/** Runs a built program as an operator would; tests that need it rely on `npm run build` (the test script does it). */
export function runCli(program: 'mesh-host' | 'meshctl', args: string[], options: { timeoutMs?: number; input?: string } = {}): Promise<RunResult> {
  return systemRunner().run(process.execPath, [`${projectDir}bin/${program}`, ...args], { timeoutMs: options.timeoutMs ?? 30_000, ...(options.input === undefined ? {} : { input: options.input }) });
}
