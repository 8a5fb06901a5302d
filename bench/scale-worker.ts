/**
 * Simulated hosts for the scale benchmark, many in one process. Each host is what the mesh sees of a
 * host, and nothing else: its own credentials (a user JWT issued as `meshctl node-creds` issues it, by
 * the account's signing key, with the host's permissions), its own connection through the host's link
 * session (a subscription to its key's subject and a direct get of the key, the re-read timer, the
 * heartbeat, status answers), the declaration's signature and schema checked as a host checks them, and
 * a report in the real sent shape, fitted under the server's limit and signed with its own node key,
 * published with its message id and acknowledged by the stream. Left out, because it is the host's own
 * disk and not the mesh: the files' work (every resource reported unchanged), the store, the outbox.
 *
 * argv: servers (comma-separated), first index, count, the hosts' folder, the operator's public key.
 * The hosts' folder holds `node-keys.json` (node → seed) and `account.json` (the account's public key and
 * its signing seed); each host's credentials are issued into it at start. Says "creds N" once its credentials are issued, then "up N" as hosts come up (N
 * more connected and listening since it last said), twice a second. Hosts connect SCALE_CONNECTING at
 * a time (default 100): a fleet's restarts are spread. SCALE_WORKER_PROFILE=DIR: the process's CPU profile
 * from its last host up to its last host's first report acknowledged (the reporting phase alone) goes
 * to DIR/worker-FIRST.cpuprofile, its user and system CPU over that phase to DIR/worker-FIRST.cpu.json.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { LinkSession } from '../src/link/session.js';
import { systemClock } from '../src/core/system/clock.js';
import { REPORT_HEADROOM } from '../src/engine/report/outbox.js';
import { fitReport, sentReport } from '../src/engine/report/sent.js';
import { receiveDeclaration } from '../src/core/declaration/load.js';
import { markOf } from '../src/core/declaration/order.js';
import type { Report } from '../src/engine/report/report.js';
import { reportSigner, type ReportSigner } from '../src/link/report-trust.js';
import { hostPermissions } from '../src/link/permissions.js';
import { accountKeyPair, issueCreds } from '../src/control/setup/nats-accounts.js';
import { simNode, quietLogger, upReporter } from './scale-support.js';

const [servers, first, count, hostsDir, publicKey] = process.argv.slice(2) as [string, string, string, string, string];
const quiet = quietLogger();
const seeds = JSON.parse(readFileSync(join(hostsDir, 'node-keys.json'), 'utf8')) as Record<string, string>;
const account = JSON.parse(readFileSync(join(hostsDir, 'account.json'), 'utf8')) as { publicKey: string; signingSeed: string };
const hosts = Number(count);
const nodes = Array.from({ length: hosts }, (_, i) => simNode(Number(first) + i));

/** Each host's credentials file, issued as `meshctl node-creds NODE` issues it. */
async function issueAll(): Promise<void> {
  const signer = await accountKeyPair(account.signingSeed);
  if (typeof signer === 'string') throw new Error(`the account's signing seed: ${signer}`);
  for (const node of nodes) {
    const text = await issueCreds({ name: `mesh-host ${node}`, signer, account: account.publicKey, permissions: hostPermissions(node) });
    writeFileSync(join(hostsDir, `${node}.creds`), text, { mode: 0o600 });
  }
}

/** What the host reports for a declaration it verified: every resource in place, in the real sent shape. */
function reportFor(node: string, sequence: number, received: Awaited<ReturnType<typeof receiveDeclaration>>, startedAt: string): Report {
  const { declaration, digest } = received;
  return {
    node, sequence, trigger: 'delivery', declaration: markOf(declaration, digest), mode: declaration.mode, outcome: 'converged',
    steps: declaration.resources.map((r) => ({ resource: r.id, type: r.type, target: 'path' in r ? String(r.path) : r.id, verb: 'none' as const, changes: [], actions: [], status: 'unchanged' as const })),
    said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt, finishedAt: new Date().toISOString(),
  };
}

/** One host: its link, and for every declaration heard, a verified read and a signed, acknowledged report. */
function startHost(node: string, onUp: () => void): void {
  let reportSequence = 0;
  let chain: Promise<void> = Promise.resolve();
  let wasUp = false;
  const session: LinkSession = new LinkSession(
    { settings: { servers: servers.split(','), name: `sim ${node}`, creds: join(hostsDir, `${node}.creds`) }, node, log: quiet, clock: systemClock, signer: reportSigner(seeds[node]!) as ReportSigner, heartbeatMs: 30_000, rereadMs: 60_000 },
    {
      onDeclaration: ({ bytes, revision }) => {
        chain = chain.then(async () => {
          const startedAt = new Date().toISOString();
          const received = await receiveDeclaration(Buffer.from(bytes), { source: `revision ${revision}`, node, requireSignature: true, pinnedKey: publicKey });
          const report = reportFor(node, ++reportSequence, received, startedAt);
          const message = fitReport(sentReport(report), (session.maxPayload ?? Infinity) - REPORT_HEADROOM);
          // As the host's outbox does: the same message id until the stream acknowledges it.
          for (;;) {
            try {
              await session.publishReport(report.sequence, message);
              if (report.sequence === 1) void reported();
              return;
            } catch {
              await new Promise((r) => setTimeout(r, 500));
            }
          }
        }).catch((err: Error) => {
          process.stderr.write(`${node}: ${err.message}\n`);
        });
      },
      onUp: () => {
        if (wasUp) return;
        wasUp = true;
        onUp();
      },
      onDown: () => {},
      status: async () => ({ node, reportSequence }),
      inventory: async () => ({}),
      heartbeat: () => ({ node, reportSequence }),
    },
  );
  void session.open();
}

/** The reporting phase's profile (SCALE_WORKER_PROFILE): begun when every host is up, ended at the last first report. */
function profiler(dir: string | undefined): { allUp: () => Promise<void>; reported: () => Promise<void> } {
  if (!dir) return { allUp: async () => {}, reported: async () => {} };
  const inspector = new Session();
  let first = 0;
  let since = process.cpuUsage();
  return {
    allUp: async () => {
      since = process.cpuUsage();
      inspector.connect();
      await inspector.post('Profiler.enable');
      await inspector.post('Profiler.start');
    },
    reported: async () => {
      if (++first < hosts) return;
      const { user, system } = process.cpuUsage(since);
      const { profile } = await inspector.post('Profiler.stop');
      writeFileSync(join(dir, `worker-${nodes[0]}.cpuprofile`), JSON.stringify(profile));
      // The phase's CPU split: the host's own code and the kernel's (its sockets' reads and writes).
      writeFileSync(join(dir, `worker-${nodes[0]}.cpu.json`), JSON.stringify({ hosts, userMs: user / 1000, systemMs: system / 1000 }));
    },
  };
}
const { allUp, reported } = profiler(process.env.SCALE_WORKER_PROFILE);

await issueAll();
process.stdout.write(`creds ${hosts}\n`);
let up = 0;
const counted = upReporter(hosts);
const countUp = () => {
  counted();
  if (++up === hosts) void allUp();
};
const connectingAtOnce = Number(process.env.SCALE_CONNECTING ?? 100);
let connecting = 0;
let slotFreed: () => void = () => {};
for (const node of nodes) {
  while (connecting >= connectingAtOnce) await new Promise<void>((r) => (slotFreed = r));
  connecting++;
  // A host still not up after 30 s gives its turn to the next (it keeps trying by itself).
  let turnGiven = false;
  const giveTurn = () => {
    if (turnGiven) return;
    turnGiven = true;
    connecting--;
    slotFreed();
  };
  const turnTimer = setTimeout(giveTurn, 30_000);
  startHost(node, () => {
    countUp();
    clearTimeout(turnTimer);
    giveTurn();
  });
}
process.on('SIGTERM', () => process.exit(0));
