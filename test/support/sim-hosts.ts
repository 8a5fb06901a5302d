import { headers, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { digestOf, newOperatorKey, sign } from '../../src/declaration/envelope.js';
import { newNkeySeed } from '../../src/declaration/nkey.js';
import { Enrolments } from '../../src/link/enrolment.js';
import { reportSigner, type ReportSigner } from '../../src/link/report-trust.js';
import { DECLARATIONS_BUCKET, heartbeatSubject, reportMessageId, reportSubject } from '../../src/link/wire.js';
import type { Report } from '../../src/report/report.js';

interface Sim {
  signer: ReportSigner;
  sequence: number;
  applied: { epoch: number; sequence: number; digest: string };
}

/**
 * Hosts that exist only on the wire, as the scale benchmarks make them: each has its own key, pinned
 * in the enrolments, a declaration in its key, and signs the reports and heartbeats it publishes as a
 * host does. What they say is whatever the test makes them say.
 */
export class SimHosts {
  private readonly sims = new Map<string, Sim>();
  private constructor(private readonly nc: NatsConnection) {}

  /** Makes `nodes`, `batch` at a time: a pinned key, a signed declaration, no report yet. */
  static async make(nc: NatsConnection, nodes: string[], options: { labels?: (node: string) => Record<string, string>; batch?: number } = {}): Promise<SimHosts> {
    const hosts = new SimHosts(nc);
    const { seed } = await newOperatorKey();
    const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
    const enrolments = await Enrolments.open(nc);
    const batch = options.batch ?? 25;
    for (let at = 0; at < nodes.length; at += batch) {
      await Promise.all(
        nodes.slice(at, at + batch).map(async (node) => {
          const payload = Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', epoch: 1, sequence: 1, resources: [{ type: 'directory', id: 'app', path: '/srv/app' }] }));
          const signer = reportSigner(newNkeySeed('node')) as ReportSigner;
          await enrolments.pin(node, signer.publicKey, options.labels ? { labels: options.labels(node) } : {});
          await kv.put(node, JSON.stringify(await sign(payload, seed)));
          hosts.sims.set(node, { signer, sequence: 0, applied: { epoch: 1, sequence: 1, digest: digestOf(payload) } });
        }),
      );
    }
    return hosts;
  }

  /** Publishes the node's next report (converged and empty unless `fields` say otherwise); resolves once the stream stored it. */
  async report(node: string, fields: Partial<Report> = {}): Promise<number> {
    const sim = this.sims.get(node)!;
    const sequence = ++sim.sequence;
    const at = new Date().toISOString();
    const report = { node, sequence, trigger: 'reconcile', declaration: sim.applied, mode: 'converged', outcome: 'converged', steps: [], said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt: at, finishedAt: at, ...fields };
    const bytes = Buffer.from(JSON.stringify(report));
    const signature = headers();
    for (const [name, value] of Object.entries(sim.signer.headersFor(bytes))) signature.set(name, value);
    await jetstream(this.nc).publish(reportSubject(node), bytes, { msgID: reportMessageId(node, sequence), headers: signature, timeout: 30_000 });
    return sequence;
  }

  /** A heartbeat as a host sends it, beating every `intervalMs`. */
  beat(node: string, intervalMs = 3_600_000): void {
    const sim = this.sims.get(node)!;
    this.nc.publish(heartbeatSubject(node), JSON.stringify({ node, reportSequence: sim.sequence, lastApplied: sim.applied, uptimeSeconds: 1, intervalMs }));
  }
}
