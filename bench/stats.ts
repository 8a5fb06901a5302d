import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { readFileSync } from 'node:fs';

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
};

export async function timeIt(fn: () => Promise<unknown> | unknown): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

/** Runs a whole process under GNU time: wall milliseconds and peak RSS in MB. */
export function timeProcess(command: string, args: string[]): { ms: number; rssMb: number; code: number | null } {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', command, ...args], { encoding: 'utf8' });
  const line = r.stderr.trim().split('\n').pop() ?? '';
  const [, kb] = line.split(' ');
  // %e has 10 ms resolution: time the wall clock ourselves as well and keep the finer one.
  return { ms: NaN, rssMb: Number(kb) / 1024, code: r.status };
}

export function wallProcess(command: string, args: string[]): { ms: number; rssMb: number; code: number | null } {
  const t = performance.now();
  const measured = timeProcess(command, args);
  return { ...measured, ms: performance.now() - t };
}

export function machine(): string {
  const os = readFileSync('/etc/os-release', 'utf8').match(/PRETTY_NAME="(.+)"/)?.[1] ?? 'unknown';
  const cpu = cpus();
  return `${os}, ${cpu[0]?.model ?? 'unknown CPU'} × ${cpu.length}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}`;
}

export const fmt = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms.toFixed(1));

/** The load average (1, 5 and 15 minutes) as the pages print it beside a figure. */
export const loadAverage = (separator = ', ') => loadavg().map((l) => l.toFixed(1)).join(separator);

/** A field of /proc/PID/status in MB: VmRSS, or its parts RssAnon (heaps, stacks) and RssFile (mapped code). */
export function statusMb(pid: number, field: 'VmRSS' | 'RssAnon' | 'RssFile' = 'VmRSS'): number {
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return kb / 1024;
}

export const rssMb = (pid: number) => statusMb(pid);

/** Clock ticks a second, the unit of /proc's CPU times. */
export const HZ = 100;

/** A process's (or, with `thread`, one of its threads') /proc stat fields after its name (the third field first). */
function statFields(pid: number, thread?: number): string[] {
  const stat = readFileSync(thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User + system clock ticks of a process, all its threads; or of one thread (`thread` = `pid`: the main one, which runs Node's event loop). */
export function cpuTicks(pid: number, thread?: number): number {
  const f = statFields(pid, thread);
  return Number(f[11]) + Number(f[12]);
}

/** The machine's CPU time so far in ticks: busy (all but idle and waiting for I/O) and in all. */
export function machineTicks(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  // user nice system idle iowait irq softirq steal: idle and iowait are not busy.
  return { busy: total - cpu[3]! - cpu[4]!, total };
}

/** The major page faults a process has taken so far: each a read from the disk of a page it had lost (its code's, or a file's). */
export function majorFaults(pid: number): number {
  return Number(statFields(pid)[9]);
}
