/**
 * Simulated hosts for the scale benchmark, many in one process: each has the real link session (its
 * own connection, listening for puts to its key, the re-read timer, heartbeats, status answers), the
 * real outbox and the real report path (sent shape, fitted under the server's limit, signed with its own
 * key from `node-keys.json` in the state root, published with its message id, removed on acknowledgement). The file work is a stand-in: the declaration is checked
 * (signature, schema) as a host checks it, and every resource reported unchanged.
 *
 * argv: servers (comma-separated), first index, count, state root, the operator's public key.
 * Says "up N" on stdout as hosts come up (N more connected and listening since it last said), twice a
 * second. Hosts connect SCALE_CONNECTING at a time (default 50): a fleet's restarts are spread, and
 * 400 connections begun in one instant on a loaded machine time out together and retry together.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LinkSession } from '../src/link/session.js';
import { systemClock } from '../src/system/clock.js';
import { Outbox, REPORT_HEADROOM } from '../src/report/outbox.js';
import { receiveDeclaration } from '../src/declaration/load.js';
import { markOf } from '../src/declaration/order.js';
import type { Report } from '../src/report/report.js';
import { reportSigner, type ReportSigner } from '../src/link/report-trust.js';
import { simNode, quietLogger, upReporter } from './scale-support.js';


const [servers, first, count, stateRoot, publicKey] = process.argv.slice(2) as [string, string, string, string, string];
const quiet = quietLogger();

const seeds = JSON.parse(readFileSync(join(stateRoot, 'node-keys.json'), 'utf8')) as Record<string, string>;
const hosts = Number(count);
const countUp = upReporter(hosts);
const connectingAtOnce = Number(process.env.SCALE_CONNECTING ?? 50);
let connecting = 0;
let slotFreed: () => void = () => {};
for (let i = Number(first); i < Number(first) + hosts; i++) {
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
  const node = simNode(i);
  const stateDir = join(stateRoot, node);
  mkdirSync(stateDir, { recursive: true });
  const outbox = new Outbox(stateDir);
  let reportSequence = 0;
  let chain: Promise<void> = Promise.resolve();
  let wasUp = false;
  const session: LinkSession = new LinkSession(
    { settings: { servers: servers.split(','), name: `sim ${node}` }, node, log: quiet, clock: systemClock, signer: reportSigner(seeds[node]!) as ReportSigner, heartbeatMs: 30_000, rereadMs: Number(process.env.SCALE_REREAD_MS ?? 60_000) },
    {
      onDeclaration: ({ bytes, revision }) => {
        chain = chain.then(async () => {
          const startedAt = new Date().toISOString();
          const { declaration, digest } = await receiveDeclaration(Buffer.from(bytes), { source: `revision ${revision}`, node, requireSignature: true, pinnedKey: publicKey });
          const report: Report = {
            node, sequence: ++reportSequence, trigger: 'delivery',
            declaration: markOf(declaration, digest),
            mode: declaration.mode, outcome: 'converged',
            steps: declaration.resources.map((r) => ({ resource: r.id, type: r.type, target: 'path' in r ? String(r.path) : r.id, verb: 'none' as const, changes: [], actions: [], status: 'unchanged' as const })),
            said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt, finishedAt: new Date().toISOString(),
          };
          outbox.add(report);
          for (;;) {
            try {
              const message = outbox.message(report.sequence, (session.maxPayload ?? Infinity) - REPORT_HEADROOM);
              if (message) await session.publishReport(report.sequence, message);
              outbox.remove(report.sequence);
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
        countUp();
        clearTimeout(turnTimer);
        giveTurn();
      },
      onDown: () => {},
      status: async () => ({ node, reportSequence }),
      inventory: async () => ({}),
      heartbeat: () => ({ node, reportSequence }),
    },
  );
  void session.open();
}
process.on('SIGTERM', () => process.exit(0));
