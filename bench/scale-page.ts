/** The scale benchmark's section of docs/bench.md: what was measured, the rows, and what they say. */
import { fmt, median } from './stats.js';

/** CPU seconds over a phase: the servers (summed), the simulated hosts' processes (summed), the control side. */
export interface Cpu {
  server: number;
  hosts: number;
  control: number;
}

export interface Figures {
  hosts: number;
  servers: number;
  perProcess: number;
  pinned: boolean;
  /** What the open-file limit was, or was raised to. */
  files: string;
  loadBefore: string;
  loadAfter: string;
  connectS: number;
  putS: number;
  allReportedS: number;
  connectCpu: Cpu;
  reportCpu: Cpu;
  serverRssMb: number;
  hostsRssMb: number;
  /** Each `meshctl status --json` over the fleet: wall, its own CPU and peak RSS, the servers' CPU meanwhile. */
  status: Array<{ s: number; cpuS: number; rssMb: number; serverCpuS: number }>;
  failed?: string;
}

const REPORT_TARGET_S = 10;
const STATUS_TARGET_S = 3;
const n = (x: number) => x.toLocaleString('en');
const where = (f: Pick<Figures, 'servers' | 'pinned'>) => `${f.servers === 1 ? 'one server' : `${f.servers} servers`}${f.pinned ? ', pinned' : ''}`;

export function scaleIntro(perProcess: number, putsInFlight: number, statusRuns: number): string[] {
  return [
    '## Scale: simulated hosts on one NATS server, and on a three-server cluster',
    '',
    '`npm run bench -- scale` (sizes: `SCALE_SIZES`, `SCALE_CLUSTER_SIZES`, `SCALE_PINNED_SIZES`; hosts a process:',
    '`SCALE_PER_PROCESS`). The mesh is made as an operator makes it: `meshctl init` (`--servers 3` for the cluster), its',
    "nats-servers started on init's configurations, in operator mode; the control side connects with init's",
    "meshctl.creds. Every simulated host has its own node key (pinned in the enrolments as `meshctl node-key` pins it)",
    "and its own credentials (a user JWT issued by the account's signing key with the host's permissions, by the",
    'function `meshctl node-creds` uses), and is what the mesh sees of a host: its own connection through the',
    "host's link session (a subscription to its key's subject and a direct get of the key, the one-minute re-read,",
    "a heartbeat every 30 s, the connection's ping every 10 s, status, inventory and plan answers), the declaration's signature and schema checked as a host",
    "checks them, and a report in the real sent shape (the product's `sentReport` and `fitReport`), signed with its own",
    "node key by the link's `publishReport`, published with its message id and acknowledged by the stream.",
    `${n(perProcess)} hosts a worker process. Left out, because it is the host's own disk and not the mesh's cost: the`,
    'files\' work (every resource reported unchanged), the store and the outbox. A signed declaration of 10 files is',
    `put for every host (${putsInFlight} puts in flight; signed beforehand). "All reported" is from the first put until the`,
    'reports stream holds one report a host. CPU is per phase: the servers (summed), the simulated hosts\' processes',
    '(summed) and the control side (the benchmark\'s own process: puts and reading the stream); RSS after the reports.',
    `\`meshctl status --json --mesh DIR\` (the fleet view, every report's signature checked) is a whole process, run ${statusRuns}`,
    'times over the whole fleet after the reports. "Pinned": the servers and the control side on core 0, the simulated',
    'hosts on core 1 (taskset). Load average (1, 5, 15 min) before the puts and after the reports. The machine has 2',
    'cores, shared with other engineers\' work.',
    '',
  ];
}

const cpuCell = (c: Cpu) => `${fmt(c.server)} / ${fmt(c.hosts)} / ${fmt(c.control)} s`;

function row(f: Figures): string {
  if (f.failed) return `| ${n(f.hosts)} | ${where(f)} | did not finish: ${f.failed} | | | | | | | | | |`;
  const met = f.allReportedS <= REPORT_TARGET_S ? 'met' : 'missed';
  return `| ${n(f.hosts)} | ${where(f)} | ${f.loadBefore} → ${f.loadAfter} | ${fmt(f.connectS)} s | ${fmt(f.putS)} s | **${fmt(f.allReportedS)} s** (${met}) | ${cpuCell(f.reportCpu)} | ${f.serverRssMb.toFixed(0)} MB | ${f.hostsRssMb.toFixed(0)} MB | ${cpuCell(f.connectCpu)} | ${statusCell(f)} |`;
}

function statusCell(f: Figures): string {
  const wall = median(f.status.map((s) => s.s));
  return `${f.status.map((s) => fmt(s.s)).join(', ')} s (${wall <= STATUS_TARGET_S ? 'met' : 'missed'}); CPU ${fmt(median(f.status.map((s) => s.cpuS)))} s, server ${fmt(median(f.status.map((s) => s.serverCpuS)))} s, ${median(f.status.map((s) => s.rssMb)).toFixed(0)} MB`;
}

export function scaleTables(rows: Figures[]): string[] {
  return [
    `Targets: every report stored within ${REPORT_TARGET_S} s of the first put; \`meshctl status\` within ${STATUS_TARGET_S} s (median of its runs).`,
    '',
    '| hosts | servers | load before → after | all connected and listening | puts | all reported | CPU while reporting: server / hosts / control | server RSS | hosts\' RSS | CPU while connecting: server / hosts / control | `meshctl status`: wall of each run; its CPU, the servers\' CPU, its RSS (medians) |',
    '| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map(row),
    '',
    `Open files: ${[...new Set(rows.filter((r) => r.files).map((r) => r.files))].join('; ')}.`,
  ];
}

/** What one side's share of the phase's CPU was: the busiest names the limit. */
function limitOf(f: Figures): string {
  const c = f.reportCpu;
  const total = c.server + c.hosts + c.control;
  const wallCores = f.allReportedS * 2;
  const sides = ([['the server', c.server], ['the simulated hosts', c.hosts], ['the control side', c.control]] as const).slice().sort((a, b) => b[1] - a[1]);
  return `${n(f.hosts)} on ${where(f)}: ${fmt(total)} s of CPU in ${fmt(f.allReportedS)} s (${((total / wallCores) * 100).toFixed(0)}% of both cores), ${sides.map(([who, s]) => `${who} ${((s / total) * 100).toFixed(0)}%`).join(', ')}`;
}

export function scaleAnalysis(rows: Figures[]): string[] {
  const done = rows.filter((r) => !r.failed);
  const lines = done.map((f) => `- **${n(f.hosts)} hosts on ${where(f)}: all reported in ${fmt(f.allReportedS)} s** (target ${REPORT_TARGET_S} s: ${f.allReportedS <= REPORT_TARGET_S ? 'met' : 'missed'}); \`meshctl status\` ${fmt(median(f.status.map((s) => s.s)))} s (target ${STATUS_TARGET_S} s: ${median(f.status.map((s) => s.s)) <= STATUS_TARGET_S ? 'met' : 'missed'}).`);
  for (const f of rows.filter((r) => r.failed)) lines.push(`- ${n(f.hosts)} hosts on ${where(f)} did not finish: ${f.failed}.`);
  if (done.length) lines.push(`- Who used the CPU from the first put to the last report: ${done.map(limitOf).join('; ')}.`);
  for (const f of done.filter((r) => r.pinned)) lines.push(pinnedLimit(f));
  const single = done.filter((r) => r.servers === 1 && !r.pinned).sort((a, b) => a.hosts - b.hosts);
  const [lo, hi] = [single[0], single.at(-1)];
  if (lo && hi && hi.hosts > lo.hosts) {
    const perHost = (hi.serverRssMb - lo.serverRssMb) / (hi.hosts - lo.hosts);
    lines.push(`- The server's memory grows by about ${(perHost * 1024).toFixed(0)} KB a host (its connection, its subscriptions, its JWT), the simulated hosts' by ${(((hi.hostsRssMb - lo.hostsRssMb) / (hi.hosts - lo.hosts)) * 1024).toFixed(0)} KB a host.`);
  }
  return lines;
}

/**
 * A pinned run names the limit from each core's own load: the simulated hosts alone on core 1, the servers and the
 * control side on core 0. What one more core would buy is the busier side's CPU spread over two cores, the other
 * side's left as it was: an estimate from the measured seconds, not a run.
 */
function pinnedLimit(f: Figures): string {
  const c = f.reportCpu;
  const hostsCore = c.hosts / f.allReportedS;
  const otherCore = (c.server + c.control) / f.allReportedS;
  const hostsBound = hostsCore >= otherCore;
  const withOneMore = Math.max(hostsBound ? c.hosts / 2 : c.hosts, hostsBound ? c.server + c.control : (c.server + c.control) / 2, f.putS);
  const limit = hostsBound ? 'the simulated hosts are the limit' : 'the servers and the control side are the limit';
  return `- Pinned, ${n(f.hosts)} hosts: the hosts' core was ${pct(hostsCore)} busy (${fmt(c.hosts)} s of CPU in ${fmt(f.allReportedS)} s), the servers' and control side's core ${pct(otherCore)} (${fmt(c.server + c.control)} s), so ${limit}, measured. One more core for ${hostsBound ? 'the hosts' : 'the servers'} would spread their ${fmt(hostsBound ? c.hosts : c.server + c.control)} s over two: about ${fmt(withOneMore)} s to all reported (estimated from these seconds; target ${REPORT_TARGET_S} s: ${withOneMore <= REPORT_TARGET_S ? 'inside it' : 'still outside it'}).`;
}

const pct = (share: number) => `${Math.min(100, share * 100).toFixed(0)}%`;
