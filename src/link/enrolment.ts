import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import type { JetStreamManager } from '@nats-io/jetstream';
import { publicNkey } from '../declaration/nkey.js';
import { refused } from '../system/errors.js';
import { lazy } from '../system/interop.js';
import { beginReportCheck, REPORT_KEY_HEADER, REPORT_SIGNATURE_HEADER, verifyReport, type PendingTrust, type ReportTrust, type SignedReport } from './report-trust.js';
import { ENROLMENTS_BUCKET, REPORTS_STREAM, reportSubject } from './wire.js';
import { chooseReplicas } from './control.js';
import { latestPerSubject } from './latest.js';
import { whileClusterForms } from './jetstream-ready.js';
import { isRevisionConflict } from './revision.js';


/**
 * How a node's key came to be trusted: pinned by the operator when the bundle was made, or taken from
 * the first signed report the node published (trust on first use).
 */
export interface Enrolment {
  key: string;
  by: 'bundle' | 'first-report';
  at: string;
  /** For `first-report`: which report it was. */
  reportSequence?: number;
  streamSequence?: number;
  /** What the operator calls the node by (`role=web`, `site=a`): what a fleet command selects on. */
  labels?: Record<string, string>;
}

/** What the control side believes of a report, and on what its key rests. */
export type CheckedTrust = ReportTrust & { enrolledBy?: Enrolment['by'] };

/** How far into a node's reports the first signed one is looked for (reports from before hosts signed them come first). */
const FIRST_REPORT_SEARCH = 200;

/**
 * Each node's enrolled key, read from the bucket (made when missing: this is the control side) and
 * cached for the life of one command. A node with none is enrolled from its first signed report in the
 * stream, so the key rests on the oldest report, whoever reads first; a pin made at the bundle step
 * comes before any report and is never replaced by one.
 */
export class Enrolments {
  private readonly cache = new Map<string, Enrolment | undefined>();
  /** Every kept enrolment was read at once: a node not in the cache has none kept. */
  private allRead = false;

  private constructor(private readonly nc: NatsConnection, private readonly kv: KV, private readonly jsm: JetStreamManager) {}

  /** Opens the bucket, making it when missing with replicas sized to the cluster (as the rest of the wire). */
  static async open(nc: NatsConnection): Promise<Enrolments> {
    const [{ Kvm }, { jetstreamManager }] = await Promise.all([lazy(import('@nats-io/kv')), lazy(import('@nats-io/jetstream'))]);
    return new Enrolments(nc, await whileClusterForms(() => new Kvm(nc).create(ENROLMENTS_BUCKET, { history: 5, replicas: chooseReplicas(nc).replicas })), await jetstreamManager(nc));
  }

  /**
   * Reads every node's enrolment in one pass (the last value of each key), for a reader about to check
   * a whole fleet: a thousand nodes cost one consumer, not a thousand reads.
   */
  async readAll(): Promise<void> {
    const kept = await latestPerSubject(this.nc, `KV_${ENROLMENTS_BUCKET}`, `$KV.${ENROLMENTS_BUCKET}.>`);
    for (const message of kept.values()) {
      const node = message.subject.slice(`$KV.${ENROLMENTS_BUCKET}.`.length);
      const operation = message.headers?.get('KV-Operation');
      if (this.cache.has(node)) continue;
      this.cache.set(node, operation === 'DEL' || operation === 'PURGE' || message.bytes.length === 0 ? undefined : (JSON.parse(Buffer.from(message.bytes).toString('utf8')) as Enrolment));
    }
    this.allRead = true;
  }

  /**
   * Checks one report against its node's key, enrolling the node from its first report when it has none;
   * the signature is checked on libuv's threads (`begun`: a check begun before, as the report was read).
   */
  async check(report: SignedReport, begun: PendingTrust = beginReportCheck(report)): Promise<CheckedTrust> {
    const enrolment = await this.enrolmentOf(report.node);
    const trust = await begun(enrolment?.key);
    return enrolment ? { ...trust, enrolledBy: enrolment.by } : trust;
  }

  /** The node's enrolment: kept, or made now from its first signed report; undefined when it has none. */
  async enrolmentOf(node: string): Promise<Enrolment | undefined> {
    if (this.cache.has(node)) return this.cache.get(node);
    const enrolment = (this.allRead ? undefined : await this.read(node)) ?? (await this.enrolFromFirstReport(node));
    this.cache.set(node, enrolment);
    return enrolment;
  }

  /**
   * Pins a node's key (the bundle step): refused when another key is enrolled, unless `replace` (a
   * machine made anew); the same key again changes nothing.
   */
  async pin(node: string, key: string, options: { replace?: boolean; labels?: Record<string, string> } = {}): Promise<Enrolment> {
    const problem = publicNkey(key, 'node');
    if (typeof problem === 'string') throw refused(`the key to pin: ${problem}`);
    const kept = await this.read(node);
    const labels = { ...kept?.labels, ...options.labels };
    const withLabels = Object.keys(labels).length > 0 ? { labels } : {};
    if (kept?.key === key && sameLabels(kept.labels, labels)) return kept;
    if (kept && kept.key !== key && !options.replace) throw refused(`${node} is enrolled with another key (${kept.key}, by ${kept.by} at ${kept.at}); pinning a new one needs --replace`);
    const enrolment: Enrolment = kept?.key === key ? { ...kept, ...withLabels } : { key, by: 'bundle', at: new Date().toISOString(), ...withLabels };
    await this.kv.put(node, JSON.stringify(enrolment));
    this.cache.set(node, enrolment);
    return enrolment;
  }

  /**
   * Sets and removes a node's labels (`remove` names keys to drop), with compare-and-set on the revision
   * read, so two operators labelling at once lose neither's change. A node with no key is refused: it
   * is not in the fleet yet.
   */
  async label(node: string, set: Record<string, string>, remove: string[]): Promise<Enrolment> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const entry = await this.kv.get(node);
      if (!entry || entry.operation !== 'PUT') throw refused(`${node} has no key in the mesh: label it when its key is made (meshctl node-key ${node} --label k=v) or once it has reported`);
      const kept = entry.json<Enrolment>();
      const labels = { ...kept.labels, ...set };
      for (const key of remove) delete labels[key];
      const enrolment: Enrolment = { ...kept, labels };
      try {
        await this.kv.update(node, JSON.stringify(enrolment), entry.revision);
        this.cache.set(node, enrolment);
        return enrolment;
      } catch (err) {
        if (!isRevisionConflict(err)) throw err;
      }
    }
    throw refused(`the enrolment of ${node} changed between every read and write: others are labelling it; nothing was changed, try again`);
  }

  /** Every node with a kept enrolment, by name (after readAll). */
  enrolled(): Array<{ node: string; enrolment: Enrolment }> {
    return [...this.cache].flatMap(([node, enrolment]) => (enrolment ? [{ node, enrolment }] : [])).sort((a, b) => (a.node < b.node ? -1 : 1));
  }

  private async read(node: string): Promise<Enrolment | undefined> {
    const entry = await this.kv.get(node);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return entry.json<Enrolment>();
  }

  /** Trust on first use: the key of the node's oldest report whose own signature holds, recorded only if nobody recorded one meanwhile. */
  private async enrolFromFirstReport(node: string): Promise<Enrolment | undefined> {
    let seq = 0;
    for (let looked = 0; looked < FIRST_REPORT_SEARCH; looked++) {
      const message = await this.jsm.streams.getMessage(REPORTS_STREAM, { seq, next_by_subj: reportSubject(node) } as never).catch(() => null);
      if (!message) return undefined;
      seq = message.seq + 1;
      const trust = verifyReport(signedReportOf(node, message.data, message.header), undefined);
      if (trust.verdict !== 'not-enrolled') continue;
      const enrolment: Enrolment = { key: trust.key, by: 'first-report', at: new Date().toISOString(), streamSequence: message.seq, ...reportSequenceOf(message.data) };
      try {
        await this.kv.create(node, JSON.stringify(enrolment));
        return enrolment;
      } catch {
        // Enrolled meanwhile (another reader, or a pin): that record stands.
        return this.read(node);
      }
    }
    return undefined;
  }
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const entries = Object.entries(a ?? {});
  return entries.length === Object.keys(b).length && entries.every(([k, v]) => b[k] === v);
}

function reportSequenceOf(bytes: Uint8Array): { reportSequence?: number } {
  try {
    const sequence = (JSON.parse(Buffer.from(bytes).toString('utf8')) as { sequence?: unknown }).sequence;
    return typeof sequence === 'number' ? { reportSequence: sequence } : {};
  } catch {
    return {};
  }
}

/** The signature headers of a message as it came (a report read from the stream). */
export function signedReportOf(node: string, bytes: Uint8Array, headers: { get(name: string): string } | undefined): SignedReport {
  return { node, bytes, key: headers?.get(REPORT_KEY_HEADER) || undefined, signature: headers?.get(REPORT_SIGNATURE_HEADER) || undefined };
}
