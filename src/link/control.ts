import type { NatsConnection } from '@nats-io/transport-node';
import { ARCHIVES_BUCKET, DECLARATIONS_BUCKET, ENROLMENTS_BUCKET, HEARTBEAT_SUBJECTS, HEARTBEATS_STREAM, REPORTS_STREAM, REPORTS_SUBJECTS } from './wire.js';
import { lazy } from '../system/interop.js';
import { whileClusterForms } from './jetstream-ready.js';

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
}

/**
 * The control side creates the declarations bucket, the reports and heartbeats streams, the enrolments
 * bucket and the archives store when missing, with replicas sized to the cluster; hosts only read and publish. An existing one is left as it is
 * unless the operator asked for a number of replicas, which is then set.
 */
export async function ensureWire(nc: NatsConnection, options: { replicas?: number } = {}): Promise<WireSetUp> {
  const choice = chooseReplicas(nc, options.replicas);
  const { replicas } = choice;
  const { jetstreamManager } = await lazy(import('@nats-io/jetstream'));
  const jsm = await jetstreamManager(nc);
  const existing = async (name: string) => {
    try {
      return await jsm.streams.info(name);
    } catch {
      return undefined;
    }
  };
  /** What became of one part of the wire: made, its replicas set, short of them, or as it was. */
  const settle = async (part: WirePart): Promise<{ created?: string; changed?: string; short?: string }> => {
    const info = await existing(part.stream);
    if (!info) {
      await whileClusterForms(() => part.create());
      return { created: part.what };
    }
    if (info.config.num_replicas === replicas) return {};
    if (options.replicas !== undefined) {
      await jsm.streams.update(part.stream, { ...info.config, num_replicas: replicas });
      return { changed: `${part.what} (had ${info.config.num_replicas})` };
    }
    if (info.config.num_replicas < replicas) return { short: `${part.what} has ${info.config.num_replicas} replica${info.config.num_replicas === 1 ? '' : 's'}` };
    return {};
  };
  const kv = async (bucket: string) => {
    const { Kvm } = await lazy(import('@nats-io/kv'));
    await new Kvm(nc).create(bucket, { history: 5, replicas });
  };
  const parts: WirePart[] = [
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
    {
      stream: `OBJ_${ARCHIVES_BUCKET}`,
      what: `the archive store ${ARCHIVES_BUCKET}`,
      create: async () => {
        const { Objm } = await lazy(import('@nats-io/obj'));
        await new Objm(nc).create(ARCHIVES_BUCKET, { replicas });
      },
    },
  ];
  // The parts are independent: asked for and made at once (five round trips through a loaded cluster's
  // meta leader one after another took long enough to matter), said in this order.
  const settled = await Promise.all(parts.map(settle));
  const created = settled.flatMap((s) => (s.created ? [s.created] : []));
  const changed = settled.flatMap((s) => (s.changed ? [s.changed] : []));
  const short = settled.flatMap((s) => (s.short ? [s.short] : []));
  return { created, changed, short, choice };
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
