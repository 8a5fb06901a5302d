import { headers, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { digestOf, newOperatorKey, sign } from '../../src/core/declaration/envelope.js';
import { newNkeySeed } from '../../src/core/declaration/nkey.js';
import { Enrolments } from '../../src/link/enrolment.js';
import { reportSigner, type ReportSigner } from '../../src/link/report-trust.js';
import { DECLARATIONS_BUCKET, heartbeatSubject, reportMessageId, reportSubject } from '../../src/link/wire.js';
import type { Report } from '../../src/engine/report/report.js';
import { lockWords, type LockNote } from '../../src/engine/inhibit/defer.js';

/**
 * What a listening host does with a delivery: converge, fail at a resource, hold its report until released,
 * say nothing, or converge but for a restart its lock holds off (`defer`: reported as the host reports it,
 * then reported done when released).
 */
export type Behaviour = 'converge' | { fail: { resource: string; message: string } } | 'hold' | 'silent' | { defer: Extract<LockNote, { state: 'held' }> };

/** A pause as a host's heartbeat says it. */
export interface Pause {
  reason: string;
  by: string;
  since: string;
  until?: string;
}

/** One delivery a listening host heard: the copy's number, the digest of its payload, its resources. */
export interface Delivery {
  epoch?: number;
  sequence: number;
  digest: string;
  resources: unknown;
}

interface Sim {
  signer: ReportSigner;
  sequence: number;
  applied: { epoch?: number; sequence: number; digest: string };
  behaviour: Behaviour;
  deliveries: Delivery[];
  held: Delivery[];
  paused: Pause | null;
}

/**
 * Hosts that exist only on the wire, as the scale benchmarks make them: each has its own key, pinned
 * in the enrolments, a declaration in its key, and signs the reports and heartbeats it publishes as a
 * host does. What they say is whatever the test makes them say.
 */
export class SimHosts {
  private readonly sims = new Map<string, Sim>();
  private sub: Subscription | undefined;
  private beats: ReturnType<typeof setInterval> | undefined;
  private applyMs = 0;
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
          hosts.sims.set(node, { signer, sequence: 0, applied: { epoch: 1, sequence: 1, digest: digestOf(payload) }, behaviour: 'converge', deliveries: [], held: [], paused: null });
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
    this.nc.publish(heartbeatSubject(node), JSON.stringify({ node, reportSequence: sim.sequence, lastApplied: sim.applied, uptimeSeconds: 1, intervalMs, paused: sim.paused }));
  }

  /**
   * From now on every host hears the puts to its key on the wire a host listens on and answers each
   * delivery as its behaviour says (converged unless told otherwise), and beats every `intervalMs`.
   * A paused one keeps the newest delivery and applies it on resume. `applyMs`: how long each apply
   * takes before its report (a benchmark's hosts' own time).
   */
  async listen(intervalMs = 500, applyMs = 0): Promise<void> {
    this.applyMs = applyMs;
    this.sub ??= this.nc.subscribe(`$KV.${DECLARATIONS_BUCKET}.>`, { callback: (_, m) => void this.deliver(m.subject.slice(m.subject.lastIndexOf('.') + 1), m.data) });
    this.beats ??= setInterval(() => {
      for (const node of this.sims.keys()) this.beat(node, intervalMs);
    }, intervalMs);
    await this.nc.flush();
  }

  close(): void {
    clearInterval(this.beats);
    this.sub?.unsubscribe();
  }

  behave(node: string, behaviour: Behaviour): void {
    this.sim(node).behaviour = behaviour;
  }

  /** What the host heard since it began to listen. */
  deliveries(node: string): Delivery[] {
    return this.sim(node).deliveries;
  }

  /** Reports every held delivery of the node, as converged. */
  async release(node: string): Promise<void> {
    for (const d of this.sim(node).held.splice(0)) await this.applied(node, d, 'converged');
  }

  pause(node: string, pause: Pause): void {
    this.sim(node).paused = pause;
    this.beat(node, 500);
  }

  /** The pause ends: the newest delivery kept is applied at once. */
  async resume(node: string): Promise<void> {
    const sim = this.sim(node);
    sim.paused = null;
    this.beat(node, 500);
    const newest = sim.held.splice(0).pop();
    if (newest) await this.answer(node, newest);
  }

  private sim(node: string): Sim {
    const sim = this.sims.get(node);
    if (!sim) throw new Error(`${node} is not a simulated host`);
    return sim;
  }

  private async deliver(node: string, data: Uint8Array): Promise<void> {
    const sim = this.sims.get(node);
    if (!sim || data.length === 0) return;
    const envelope = JSON.parse(new TextDecoder().decode(data)) as { payload: string };
    const payload = Buffer.from(envelope.payload, 'base64');
    const d = JSON.parse(payload.toString('utf8')) as { epoch?: number; sequence: number; resources: unknown };
    const delivery: Delivery = { ...(d.epoch === undefined ? {} : { epoch: d.epoch }), sequence: d.sequence, digest: digestOf(payload), resources: d.resources };
    sim.deliveries.push(delivery);
    if (sim.paused) sim.held = [delivery];
    else await this.answer(node, delivery);
  }

  private async answer(node: string, delivery: Delivery): Promise<void> {
    const b = this.sim(node).behaviour;
    if (b === 'silent') return;
    if (b === 'hold') return void this.sim(node).held.push(delivery);
    if (typeof b === 'object' && 'defer' in b) {
      this.sim(node).held.push(delivery);
      const step = { resource: 'app', type: 'service', target: 'app.service', verb: 'update', changes: [], actions: ['restart (conf changed)'], status: 'deferred', lock: b.defer, detail: lockWords(b.defer) };
      return this.applied(node, delivery, 'converged', undefined, [step]);
    }
    if (this.applyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.applyMs));
    await this.applied(node, delivery, b === 'converge' ? 'converged' : 'failed', b === 'converge' ? undefined : b.fail);
  }

  /** The report of a delivery applied: what the host applied is that delivery's mark when it converged. */
  private async applied(node: string, d: Delivery, outcome: 'converged' | 'failed', error?: { resource: string; message: string }, steps: unknown[] = []): Promise<void> {
    const declaration = { ...(d.epoch === undefined ? {} : { epoch: d.epoch }), sequence: d.sequence, digest: d.digest };
    if (outcome === 'converged') this.sim(node).applied = declaration;
    await this.report(node, { trigger: 'delivery', declaration, outcome, ...(error ? { error } : {}), steps: steps as Report['steps'] });
  }
}
