import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { projectDir } from './cli.js';

export interface Served {
  url: string;
  proc: ChildProcess;
  log: () => string;
  stop(): Promise<void>;
}

/** Runs `meshctl serve` as an operator would (on a free port unless told), until it says where it serves. */
export async function startServe(args: string[], options: { program?: string[] } = {}): Promise<Served> {
  const program = options.program ?? [process.execPath, join(projectDir, 'bin/meshctl')];
  const withListen = args.includes('--listen') ? args : [...args, '--listen', '127.0.0.1:0'];
  const proc = spawn(program[0]!, [...program.slice(1), 'serve', ...withListen], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`meshctl serve did not start:\n${log}`)), 60_000);
    const look = () => {
      const m = /serving the mesh's page on (\S+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    proc.stdout!.on('data', look);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`meshctl serve exited ${code}:\n${log}`));
    });
  });
  return {
    url,
    proc,
    log: () => log,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exit = new Promise((resolve) => proc.once('exit', resolve));
      proc.kill('SIGTERM');
      await exit;
    },
  };
}
