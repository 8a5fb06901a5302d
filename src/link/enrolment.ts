import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import type { JetStreamManager } from '@nats-io/jetstream';
import { publicNkey } from '../core/declaration/nkey.js';
import { refused } from '../core/system/errors.js';
import { lazy } from '../core/system/interop.js';
import { beginReportCheck, verifyReport, type PendingTrust, type ReportTrust, type SignedReport } from './report-trust.js';
import { ENROLMENTS_BUCKET, REPORTS_STREAM, reportSubject } from './wire.js';
import { chooseReplicas } from './control.js';
import { latestPerSubject } from './latest.js';
import { whileClusterForms } from './jetstream-ready.js';
import { isRevisionConflict } from './revision.js';
import { checkRekeyChain } from './rekey.js';
import { reportSequenceOf, retiredTrust, signedReportOf, type RetiredKey } from './signed-report.js';
export type { RetiredKey };
import { sealingClaimHolds, type SealingClaim } from './sealing-trust.js';

/**
 * How a node's key came to be trusted: pinned by the operator when the bundle was made, or taken from
 * the first signed report the node published (trust on first use).
 */
export interface Enrolment {
  key: string;
  by: 'bundle' | 'first-report' | 'rekey';
  at: string;
  /** For `first-report`: which report it was. */
  reportSequence?: number;
  streamSequence?: number;
  /** What the operator calls the node by (`role=web`, `site=a`): what a fleet command selects on. */
  labels?: Record<string, string>;
  /**
   * The keys the node had before (`mesh-host rekey`), each with the last report it signed: a report
   * signed by one after that is flagged, one before it still verifies.
   */
  retired?: RetiredKey[];
  /**
   * The host's curve key (X…), signed by the node's key (link/sealing-trust.ts): what meshctl seals the
   * node's secrets to. Pinned with the key, or recorded from the host's reports (a host made before curve
   * keys, or one whose key changed); `at` is when it was recorded.
   */
  sealing?: SealingClaim & { at: string };
}

/**
 * A node taken out of the mesh (`meshctl node-remove`), kept under its name in place of its enrolment:
 * its key is no longer trusted, the NATS users it had are revoked, and the fleet view says so.
 */
export interface Removal {
  removed: { at: string; formerKey?: string; users: string[] };
}

const isRemoval = (value: unknown): value is Removal => typeof value === 'object' && value !== null && 'removed' in value;

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
  private readonly removals = new Map<string, Removal['removed']>();
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
      const value = operation === 'DEL' || operation === 'PURGE' || message.bytes.length === 0 ? undefined : (JSON.parse(Buffer.from(message.bytes).toString('utf8')) as unknown);
      if (isRemoval(value)) this.removals.set(node, value.removed);
      this.cache.set(node, isRemoval(value) ? undefined : (value as Enrolment | undefined));
    }
    this.allRead = true;
  }

  /**
   * Checks one report against its node's key, enrolling the node from its first report when it has none;
   * the signature is checked on libuv's threads (`begun`: a check begun before, as the report was read).
   */
  async check(report: SignedReport, begun: PendingTrust = beginReportCheck(report)): Promise<CheckedTrust> {
    let enrolment = await this.enrolmentOf(report.node);
    if (enrolment && report.rekey && report.key && report.key !== enrolment.key) enrolment = await this.followRekey(report, enrolment);
    const trust = await begun(enrolment?.key);
    const retired = trust.verdict === 'unknown-key' ? enrolment?.retired?.find((r) => r.key === report.key) : undefined;
    const checked = retired ? retiredTrust(report, retired) : trust;
    return enrolment ? { ...checked, enrolledBy: enrolment.by } : checked;
  }

  /**
   * A report signed by a new key, carrying the statement of the change: when the statement holds (from
   * the key the mesh holds, to the report's, signed by both), the new key is recorded as the node's and
   * the old one as retired after the report the statement names; compare-and-set, so two readers
   * recording it at once record it once. The enrolment as it stands otherwise.
   */
  private async followRekey(report: SignedReport, enrolment: Enrolment): Promise<Enrolment> {
    const chain = checkRekeyChain(report.rekey!, report.node, enrolment.key, report.key!);
    if (typeof chain === 'string') return enrolment;
    const entry = await this.kv.get(report.node);
    if (!entry || entry.operation !== 'PUT') return enrolment;
    const kept = entry.json<Enrolment>();
    if (kept.key !== chain[0]!.from) return this.read(report.node).then((e) => e ?? enrolment);
    const retired = chain.map((r) => ({ key: r.from, at: r.at, afterReport: r.afterReport, to: r.to }));
    const next: Enrolment = { ...kept, key: chain.at(-1)!.to, by: 'rekey', at: new Date().toISOString(), retired: [...(kept.retired ?? []), ...retired] };
    try {
      await this.kv.update(report.node, JSON.stringify(next), entry.revision);
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
      const now = await this.read(report.node);
      if (now) this.cache.set(report.node, now);
      return now ?? enrolment;
    }
    this.cache.set(report.node, next);
    return next;
  }

  /** The node's enrolment: kept, or made now from its first signed report; undefined when it has none. */
  async enrolmentOf(node: string): Promise<Enrolment | undefined> {
    if (this.cache.has(node)) return this.cache.get(node);
    const kept = this.allRead ? undefined : await this.read(node);
    // A removed node is enrolled again only by a new pin, never from a report.
    const enrolment = kept ?? (this.removals.has(node) ? undefined : await this.enrolFromFirstReport(node));
    this.cache.set(node, enrolment);
    return enrolment;
  }

  /**
   * Pins a node's key (the bundle step): refused when another key is enrolled, unless `replace` (a
   * machine made anew); the same key again changes nothing.
   */
  async pin(node: string, key: string, options: { replace?: boolean; labels?: Record<string, string>; sealing?: SealingClaim } = {}): Promise<Enrolment> {
    const problem = publicNkey(key, 'node');
    if (typeof problem === 'string') throw refused(`the key to pin: ${problem}`);
    if (options.sealing && !sealingClaimHolds(options.sealing, key)) throw refused(`the curve key to pin (${options.sealing.key}) is not signed by ${key}`);
    const kept = await this.read(node);
    const labels = { ...kept?.labels, ...options.labels };
    const withLabels = Object.keys(labels).length > 0 ? { labels } : {};
    const sealing = options.sealing ? { sealing: { ...options.sealing, at: new Date().toISOString() } } : {};
    if (kept?.key === key && sameLabels(kept.labels, labels) && (!options.sealing || kept.sealing?.key === options.sealing.key)) return kept;
    if (kept && kept.key !== key && !options.replace) throw refused(`${node} is enrolled with another key (${kept.key}, by ${kept.by} at ${kept.at}); pinning a new one needs --replace`);
    const enrolment: Enrolment = kept?.key === key ? { ...kept, ...withLabels, ...sealing } : { key, by: 'bundle', at: new Date().toISOString(), ...withLabels, ...sealing };
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
      const value = entry?.operation === 'PUT' ? entry.json<Enrolment | Removal>() : undefined;
      if (isRemoval(value)) throw refused(`${node} was removed from the mesh at ${value.removed.at}: give it a key again (meshctl node-key ${node}) before labelling it`);
      if (!entry || !value) throw refused(`${node} has no key in the mesh: label it when its key is made (meshctl node-key ${node} --label k=v) or once it has reported`);
      const kept = value;
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

  /**
   * Takes a node out: its enrolment replaced by the record of its removal (its key no longer trusted,
   * nothing enrolled from its reports again); a node pinned anew later replaces the record.
   */
  async remove(node: string, users: string[], at: string): Promise<Removal['removed']> {
    const entry = await this.kv.get(node);
    const kept = entry?.operation === 'PUT' ? entry.json<Enrolment | Removal>() : undefined;
    if (kept && isRemoval(kept)) return kept.removed;
    const removed = { at, ...(kept?.key ? { formerKey: kept.key } : {}), users };
    await this.kv.put(node, JSON.stringify({ removed }));
    this.cache.set(node, undefined);
    this.removals.set(node, removed);
    return removed;
  }

  /** Every node taken out of the mesh, with when (after readAll). */
  removed(): Array<{ node: string; at: string }> {
    return [...this.removals].map(([node, r]) => ({ node, at: r.at })).sort((a, b) => (a.node < b.node ? -1 : 1));
  }

  /**
   * The curve key to seal the node's secrets to: the one its latest report claims, when that claim holds
   * under the node's enrolled key (recorded now if it is new: the host made one, or made it anew), else
   * the recorded one if its signature holds; undefined when the node has none that holds.
   */
  async sealingKeyOf(node: string, reported?: SealingClaim): Promise<string | undefined> {
    const enrolment = await this.enrolmentOf(node);
    if (!enrolment) return undefined;
    if (reported && reported.key !== enrolment.sealing?.key && sealingClaimHolds(reported, enrolment.key)) {
      await this.recordSealing(node, reported);
      return reported.key;
    }
    return enrolment.sealing && sealingClaimHolds(enrolment.sealing, enrolment.key) ? enrolment.sealing.key : undefined;
  }

  /** Records a node's curve key claim beside its key (compare-and-set: labels set meanwhile are kept). */
  private async recordSealing(node: string, claim: SealingClaim): Promise<void> {
    for (let attempt = 0; attempt < 8; attempt++) {
      const entry = await this.kv.get(node);
      if (!entry || entry.operation !== 'PUT') return;
      const kept = entry.json<Enrolment>();
      if (!sealingClaimHolds(claim, kept.key)) return;
      const enrolment: Enrolment = { ...kept, sealing: { key: claim.key, signature: claim.signature, at: new Date().toISOString() } };
      try {
        await this.kv.update(node, JSON.stringify(enrolment), entry.revision);
        this.cache.set(node, enrolment);
        return;
      } catch (err) {
        if (!isRevisionConflict(err)) throw err;
      }
    }
  }

  /** Every node with a kept enrolment, by name (after readAll). */
  enrolled(): Array<{ node: string; enrolment: Enrolment }> {
    return [...this.cache].flatMap(([node, enrolment]) => (enrolment ? [{ node, enrolment }] : [])).sort((a, b) => (a.node < b.node ? -1 : 1));
  }

  private async read(node: string): Promise<Enrolment | undefined> {
    const entry = await this.kv.get(node);
    if (!entry || entry.operation !== 'PUT') return undefined;
    const value = entry.json<Enrolment | Removal>();
    if (isRemoval(value)) this.removals.set(node, value.removed);
    return isRemoval(value) ? undefined : value;
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
