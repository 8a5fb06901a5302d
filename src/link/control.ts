import type { NatsConnection } from '@nats-io/transport-node';
import { ARCHIVES_BUCKET, DECLARATIONS_BUCKET, DECLARATIONS_STREAM, ENROLMENTS_BUCKET, HEARTBEAT_SUBJECTS, HEARTBEATS_STREAM, HISTORY_STREAM, PROPOSALS_BUCKET, REPORTS_STREAM, REPORTS_SUBJECTS, TRUST_BUCKET } from './wire.js';
import type { JetStreamManager } from '@nats-io/jetstream';
import { lazy } from '../core/system/interop.js';
import { streamInfoOrNone, whileClusterForms } from './jetstream-ready.js';

/** JetStream's refusal to make a stream whose name another stream of other settings has. */
const STREAM_NAME_IN_USE = 10058;

/** How many copies the mesh's records keep: one a server, at most three (JetStream's useful bound). */
export const MAX_REPLICAS = 3;

export interface ReplicaChoice {
  replicas: number;
  /** Why: said by the command that creates the records. */
  why: string;
}

/**
 * The servers of the cluster this connection reached, as the server advertises them (its INFO lists
 * the client URLs of every server of its cluster). A server alone, or one configured not to advertise,
 * counts as one.
 */
export function clusterSize(nc: NatsConnection): number {
  const info = nc.info as { cluster?: string; connect_urls?: string[] } | undefined;
  if (!info?.cluster) return 1;
  return Math.max(1, new Set(info.connect_urls ?? []).size);
}

/** Replicas sized to the cluster (up to three), unless the operator said a number. */
export function chooseReplicas(nc: NatsConnection, requested?: number): ReplicaChoice {
  const servers = clusterSize(nc);
  if (requested !== undefined) return { replicas: requested, why: `as asked (--replicas ${requested}; the cluster has ${servers} server${servers === 1 ? '' : 's'})` };
  const replicas = Math.min(MAX_REPLICAS, servers);
  return { replicas, why: servers === 1 ? 'one server' : `a cluster of ${servers} servers${servers > MAX_REPLICAS ? ` (at most ${MAX_REPLICAS})` : ''}` };
}

export interface WireSetUp {
  /** What was created now, each with its replicas; empty when everything was there. */
  created: string[];
  /** What existed with other replicas and was set to the number asked. */
  changed: string[];
  /** What exists with fewer replicas than chosen: it does not survive the loss of its server. */
  short: string[];
  choice: ReplicaChoice;
}

/** One stream of the wire (a bucket and an object store are streams too), and how it is made. */
interface WirePart {
  stream: string;
  what: string;
  create(): Promise<void>;
  /** The retention the operator asked to set on an existing stream, when there is one. */
  keep?: () => { maxAgeNs: number } | undefined;
}

/** `365d`, `12h`: a stream's max_age (nanoseconds, 0 for ever) as the operator wrote it. */
export function describeAge(ns: number): string {
  if (!ns) return 'for ever';
  const ms = ns / 1_000_000;
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** How long the history keeps a declaration when the operator never said: a year. */
export const DEFAULT_KEEP_HISTORY_MS = 365 * 86_400_000;

/** What the operator said of the history's retention: `keepMs` for a history made now, and `set` to change an existing one to it. */
export interface HistoryRetention {
  keepMs: number;
  set: boolean;
}

/** What became of one part of the wire: made, its replicas or retention set, short of replicas, or as it was. */
interface PartSettled {
  created?: string;
  changed?: string;
  short?: string;
}

/**
 * Makes a missing part; nothing when this command made it, or the part as another made it a moment
 * before (two commands at once, two bundles say, both found it missing; the server refuses the second
 * make as "already in use", and the part is then taken as found).
 */
async function made(jsm: JetStreamManager, part: WirePart) {
  try {
    await whileClusterForms(() => part.create());
    return undefined;
  } catch (err) {
    const found = (err as { code?: unknown }).code === STREAM_NAME_IN_USE ? await streamInfoOrNone(jsm, part.stream) : undefined;
    if (!found) throw err;
    return found;
  }
}

/**
 * One part brought to what was asked. Only the server's "no such stream" makes a part missing: a stream
 * whose leader is being elected again (its server just lost) does not answer for a moment, and taking
 * that for missing would make it again, with the replicas of the servers answering now, which the
 * server refuses as another configuration.
 */
async function settle(jsm: JetStreamManager, part: WirePart, replicas: number, asked: number | undefined): Promise<PartSettled> {
  const info = (await streamInfoOrNone(jsm, part.stream)) ?? (await made(jsm, part));
  if (!info) return { created: part.what };
  const keep = part.keep?.();
  if (keep && info.config.max_age !== keep.maxAgeNs) {
    await jsm.streams.update(part.stream, { ...info.config, max_age: keep.maxAgeNs, ...(asked !== undefined ? { num_replicas: replicas } : {}) });
    return { changed: `${part.what} (kept ${describeAge(info.config.max_age)}, now ${describeAge(keep.maxAgeNs)})` };
  }
  if (info.config.num_replicas === replicas) return {};
  if (asked !== undefined) {
    await jsm.streams.update(part.stream, { ...info.config, num_replicas: replicas });
    return { changed: `${part.what} (had ${info.config.num_replicas})` };
  }
  if (info.config.num_replicas < replicas) return { short: `${part.what} has ${info.config.num_replicas} replica${info.config.num_replicas === 1 ? '' : 's'}` };
  return {};
}

/** The parts of the wire the history does not source: the buckets, the streams and the archive store. */
function wireParts(nc: NatsConnection, jsm: JetStreamManager, replicas: number): WirePart[] {
  const kv = async (bucket: string, history = 5) => {
    const { Kvm } = await lazy(import('@nats-io/kv'));
    await new Kvm(nc).create(bucket, { history, replicas });
  };
  return [
    { stream: `KV_${DECLARATIONS_BUCKET}`, what: `the bucket ${DECLARATIONS_BUCKET}`, create: () => kv(DECLARATIONS_BUCKET) },
    {
      stream: REPORTS_STREAM,
      what: `the stream ${REPORTS_STREAM}`,
      create: async () => void (await jsm.streams.add({ name: REPORTS_STREAM, subjects: [REPORTS_SUBJECTS], duplicate_window: 2 * 60 * 1_000_000_000, num_replicas: replicas })),
    },
    // Heartbeats are plain publishes; this stream keeps only the newest of each node, so the fleet view
    // knows every node's last beat at once instead of listening for three intervals.
    {
      stream: HEARTBEATS_STREAM,
      what: `the stream ${HEARTBEATS_STREAM}`,
      create: async () => void (await jsm.streams.add({ name: HEARTBEATS_STREAM, subjects: [HEARTBEAT_SUBJECTS], max_msgs_per_subject: 1, num_replicas: replicas })),
    },
    // The control side's record of each node's key, and the fleet's archives: lost with their server
    // otherwise, like the rest.
    { stream: `KV_${ENROLMENTS_BUCKET}`, what: `the bucket ${ENROLMENTS_BUCKET}`, create: () => kv(ENROLMENTS_BUCKET) },
    // Every version of the trust root, each under its own key and written once; the declarations
    // proposed and waiting for a second signature.
    { stream: `KV_${TRUST_BUCKET}`, what: `the bucket ${TRUST_BUCKET}`, create: () => kv(TRUST_BUCKET, 1) },
    { stream: `KV_${PROPOSALS_BUCKET}`, what: `the bucket ${PROPOSALS_BUCKET}`, create: () => kv(PROPOSALS_BUCKET) },
    {
      stream: `OBJ_${ARCHIVES_BUCKET}`,
      what: `the archive store ${ARCHIVES_BUCKET}`,
      create: async () => {
        const { Objm } = await lazy(import('@nats-io/obj'));
        await new Objm(nc).create(ARCHIVES_BUCKET, { replicas });
      },
    },
  ];
}

/**
 * The control side creates the declarations bucket, the reports and heartbeats streams, the enrolments
 * bucket and the archives store when missing, with replicas sized to the cluster; hosts only read and publish. An existing one is left as it is
 * unless the operator asked for a number of replicas, which is then set.
 */
export async function ensureWire(nc: NatsConnection, options: { replicas?: number; history?: HistoryRetention } = {}): Promise<WireSetUp> {
  const choice = chooseReplicas(nc, options.replicas);
  const { replicas } = choice;
  const { jetstreamManager } = await lazy(import('@nats-io/jetstream'));
  const jsm = await jetstreamManager(nc);
  const settleOne = (part: WirePart) => settle(jsm, part, replicas, options.replicas);
  // The parts are independent: asked for and made at once (five round trips through a loaded cluster's
  // meta leader one after another took long enough to matter), said in this order. The history sources
  // the bucket, made first: a source to a stream not there yet is retried only after a while.
  const settled = await Promise.all(wireParts(nc, jsm, replicas).map(settleOne));
  settled.push(await settleOne(historyPart(jsm, replicas, options.history)));
  const created = settled.flatMap((s) => (s.created ? [s.created] : []));
  const changed = settled.flatMap((s) => (s.changed ? [s.changed] : []));
  const short = settled.flatMap((s) => (s.short ? [s.short] : []));
  return { created, changed, short, choice };
}

/**
 * Every declaration ever put, for as long as the operator keeps it: the server sources the bucket's
 * stream, so a put is kept whoever made it and however it was made. Roll-ups are not honoured here: a
 * purged key's marker is kept as one more entry, and what came before it stays.
 */
function historyPart(jsm: JetStreamManager, replicas: number, retention: HistoryRetention | undefined): WirePart {
  return {
    stream: HISTORY_STREAM,
    what: `the stream ${HISTORY_STREAM}`,
    create: async () =>
      void (await jsm.streams.add({ name: HISTORY_STREAM, sources: [{ name: DECLARATIONS_STREAM }], max_age: (retention?.keepMs ?? DEFAULT_KEEP_HISTORY_MS) * 1_000_000, num_replicas: replicas, allow_direct: true })),
    keep: () => (retention?.set ? { maxAgeNs: retention.keepMs * 1_000_000 } : undefined),
  };
}

/** One line for the operator: what was created with how many replicas and why, and what is short of them. */
export function describeSetUp(setUp: WireSetUp): string[] {
  const lines: string[] = [];
  const { replicas, why } = setUp.choice;
  if (setUp.created.length) lines.push(`created ${setUp.created.join(' and ')} with ${replicas} replica${replicas === 1 ? '' : 's'} (${why})`);
  if (setUp.changed.length) lines.push(`set ${setUp.changed.join(' and ')} to ${replicas} replica${replicas === 1 ? '' : 's'} (${why})`);
  if (setUp.short.length) lines.push(`${setUp.short.join('; ')}, fewer than the ${replicas} chosen (${why}): losing a server can lose it until the server returns; --replicas ${replicas} raises it`);
  return lines;
}
