import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ObjectInfo, ObjectStore } from '@nats-io/obj';
import { ARCHIVES_BUCKET } from '../../link/wire.js';
import type { Resource } from '../../core/declaration/schema.js';
import { isEnvelope } from '../../core/declaration/envelope.js';
import { connectLink, type LinkSettings } from '../../link/connect.js';
import type { Logger } from '../../core/system/log.js';
import { lazy } from '../../core/system/interop.js';
import { ArchiveRefused } from './refusal.js';

/** What an object of the archive store says of itself. */
export interface ArchiveObjectInfo {
  name: string;
  size: number;
  /** sha256 (hex) as the store computed it on upload. */
  sha256: string;
}

/** Read access to the mesh's archives: all a host needs (the trust setup gives it nothing more). */
export interface ArchiveObjects {
  info(name: string): Promise<ArchiveObjectInfo | undefined>;
  /** The object's bytes as they arrive; undefined when there is no such object. */
  read(name: string): Promise<AsyncIterable<Uint8Array> | undefined>;
  /** Whether this store is a copy that follows another (a site's copy of the hub's): an object may still be on its way. */
  follows?(): Promise<boolean>;
}

/** Gives the archive store when it is needed, or refuses ('no-link') saying why there is none. */
export type ArchiveObjectsProvider = () => Promise<ArchiveObjects>;

/** The store's "SHA-256=<base64url>" as hex; undefined for anything else. */
export function sha256OfDigest(digest: string): string | undefined {
  if (!digest.startsWith('SHA-256=')) return undefined;
  const bytes = Buffer.from(digest.slice('SHA-256='.length).replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === 32 ? bytes.toString('hex') : undefined;
}

/** The archive bucket; over another JetStream API (a site's leaf reaching the hub's) when one is named. */
async function openBucket(nc: NatsConnection, create: boolean, apiPrefix?: string): Promise<ObjectStore> {
  const { Objm } = await lazy(import('@nats-io/obj'));
  const objm = apiPrefix ? new Objm((await lazy(import('@nats-io/jetstream'))).jetstream(nc, { apiPrefix })) : new Objm(nc);
  try {
    return create ? await objm.create(ARCHIVES_BUCKET) : await objm.open(ARCHIVES_BUCKET);
  } catch (err) {
    throw new ArchiveRefused('fetch-failed', `the archive store (bucket ${ARCHIVES_BUCKET}${apiPrefix ? ` through ${apiPrefix}` : ''}) cannot be opened: ${(err as Error).message}`);
  }
}

/**
 * How many of an object's parts (its chunks, on their own subject) a store holds, of how many it says.
 * A site's copy can describe an object whose parts it lost: with nats-server 2.9.10, when the uplink
 * is down for less than the copy's stall check (3 s without a heartbeat), the hub's consumer that feeds
 * the copy outlives the cut and passes over what was stored meanwhile, and the copy, seeing the next
 * delivery in sequence, takes the gap for messages deleted at the hub and marks them deleted for good.
 */
async function partsHeld(os: ObjectStore, info: ObjectInfo): Promise<{ held: number; parts: number }> {
  if (info.chunks === 0) return { held: 0, parts: 0 };
  const subject = `$O.${ARCHIVES_BUCKET}.C.${info.nuid}`;
  const state = (await os.status({ subjects_filter: subject })).streamInfo.state;
  return { held: state.subjects?.[subject] ?? 0, parts: info.chunks };
}

function infoOf(info: { name: string; size: number; digest: string; deleted?: boolean } | null): ArchiveObjectInfo | undefined {
  if (!info || info.deleted) return undefined;
  const sha256 = sha256OfDigest(info.digest);
  if (!sha256) throw new ArchiveRefused('fetch-failed', `object '${info.name}' carries no sha256 digest (${info.digest})`);
  return { name: info.name, size: info.size, sha256 };
}

/**
 * The archive store over a NATS connection (the link's own, or a command's). At a site it is the
 * site's copy; an object the copy describes but lacks parts of is read from the store it copies (the
 * hub's, through the leaf's uplink), and the log says so.
 */
export function natsArchiveObjects(nc: NatsConnection, log?: Logger): ArchiveObjects {
  let bucket: Promise<ObjectStore> | undefined;
  let copied: Promise<ObjectStore | undefined> | undefined;
  const store = () => (bucket ??= openBucket(nc, false));
  const followedApi = async () => (await (await store()).status()).streamInfo.config.mirror?.external?.api;
  /** The store this one copies, when it copies one over another JetStream API. */
  const original = () => (copied ??= followedApi().then((api) => (api ? openBucket(nc, false, api) : undefined)));
  return {
    async info(name) {
      return infoOf(await (await store()).info(name));
    },
    async follows() {
      return (await (await store()).status()).streamInfo.config.mirror !== undefined;
    },
    async read(name) {
      const here = await store();
      const info = await here.info(name);
      if (!info || info.deleted) return undefined;
      let from = here;
      const { held, parts } = await partsHeld(here, info);
      const there =
        held < parts
          ? await original().catch((err: Error) => {
              copied = undefined;
              throw new ArchiveRefused('fetch-failed', `object '${name}': the site's copy of the store holds ${held} of its ${parts} parts, and the hub's store cannot be reached through the leaf node (${err.message})`);
            })
          : undefined;
      if (there) {
        log?.warn({ object: name, held, parts }, "archive: the site's copy of the store lacks parts of this object (lost in a short cut of the uplink); read from the hub's store through the leaf");
        from = there;
      }
      const result = await from.get(name);
      if (!result) return undefined;
      // The client checks the object's own digest at the end: a corrupt object errors the stream.
      result.error.catch(() => {});
      return result.data;
    },
  };
}

/** An object a store describes without every part of it. */
export interface ObjectLackingParts {
  name: string;
  held: number;
  parts: number;
}

/**
 * The objects a store (a site's copy, reached over its domain's API) describes but lacks parts of: what
 * a short cut of the uplink left it without. Its hosts read those at the hub while the uplink is up.
 */
export async function objectsLackingParts(nc: NatsConnection, apiPrefix?: string): Promise<ObjectLackingParts[]> {
  const store = await openBucket(nc, false, apiPrefix);
  const lacking: ObjectLackingParts[] = [];
  for (const info of await store.list()) {
    if (info.deleted) continue;
    const { held, parts } = await partsHeld(store, info);
    if (held < parts) lacking.push({ name: info.name, held, parts });
  }
  return lacking;
}

/** Uploads a file into the archive store (creating the bucket when missing); what the store then says of it. */
export async function putArchiveObject(nc: NatsConnection, name: string, file: string): Promise<ArchiveObjectInfo> {
  const bucket = await openBucket(nc, true);
  // A file read without an encoding gives Buffers: the web stream's chunks are bytes.
  const stream = Readable.toWeb(createReadStream(file, { highWaterMark: 128 * 1024 })) as ReadableStream<Uint8Array>;
  const info = await bucket.put({ name }, stream);
  return infoOf(info)!;
}

/**
 * What `meshctl send` refuses before a declaration reaches the mesh: an archive whose object is not
 * in the store, or whose digest is not the stored object's (hosts would fail it one by one).
 */
export async function archiveObjectProblems(nc: NatsConnection, sent: unknown): Promise<string[]> {
  const wanted = archivesNamed(sent);
  if (wanted.length === 0) return [];
  const objects = natsArchiveObjects(nc);
  const problems: string[] = [];
  for (const w of wanted) {
    let info;
    try {
      info = await objects.info(w.object);
    } catch (err) {
      problems.push(`/resources/${w.i} (archive '${w.id}'): object '${w.object}' cannot be looked up: ${(err as Error).message}`);
      continue;
    }
    if (!info) problems.push(`/resources/${w.i} (archive '${w.id}'): object '${w.object}' is not in ${ARCHIVES_BUCKET} (upload it with meshctl put-archive)`);
    else if (info.sha256 !== w.sha256) problems.push(`/resources/${w.i} (archive '${w.id}'): the declaration says sha256 ${w.sha256}, the stored object '${w.object}' has ${info.sha256}`);
  }
  return problems;
}

const perConnection = new WeakMap<NatsConnection, ArchiveObjects>();

/** The archive store over a connection held elsewhere (the daemon's link); refused while there is none. */
export function connectionArchiveObjects(connection: () => NatsConnection | undefined, why: () => string, log?: Logger): ArchiveObjectsProvider {
  return async () => {
    const nc = connection();
    if (!nc || nc.isClosed()) throw new ArchiveRefused('no-link', `the archive store cannot be reached: ${why()}`);
    let objects = perConnection.get(nc);
    if (!objects) perConnection.set(nc, (objects = natsArchiveObjects(nc, log)));
    return objects;
  };
}

/** Where a one-shot command (apply FILE, genesis) finds the store: the configuration's link, or a bundle's. */
export interface ArchiveLink {
  settings: Omit<LinkSettings, 'name' | 'persistent'>;
}

/**
 * The archive store for a one-shot command: connected on first need over the link settings it is
 * given (once, within a bound, as commands connect), closed when the command ends. Without servers it
 * refuses, saying there is no link.
 */
export function onDemandArchiveObjects(link: ArchiveLink, log: Logger): { provider: ArchiveObjectsProvider; close(): Promise<void> } {
  let nc: Promise<NatsConnection> | undefined;
  return {
    provider: async () => {
      if (link.settings.servers.length === 0) throw new ArchiveRefused('no-link', 'an object source needs the link, and none is configured (no servers in the configuration)');
      nc ??= connectLink({ ...link.settings, name: 'mesh-host (archive fetch)', persistent: false }, log);
      try {
        return natsArchiveObjects(await nc, log);
      } catch (err) {
        nc = undefined;
        throw new ArchiveRefused('fetch-failed', `the archive store cannot be reached: ${(err as Error).message}`);
      }
    },
    close: async () => {
      const open = nc;
      nc = undefined;
      if (open) await (await open.catch(() => undefined))?.close();
    },
  };
}

/**
 * The archive objects a declaration as sent names (plain, or the payload of an envelope), read before
 * the declaration is checked whole: whatever is not an archive with an object source is skipped here,
 * and refused by the host's validation as it would be anyway.
 */
function archivesNamed(sent: unknown): Array<{ i: number; id: string; object: string; sha256: string }> {
  let value = sent;
  if (isEnvelope(value)) {
    try {
      value = JSON.parse(Buffer.from(value.payload, 'base64').toString('utf8'));
    } catch {
      return [];
    }
  }
  const resources = (value as { resources?: unknown } | null)?.resources;
  if (!Array.isArray(resources)) return [];
  return (resources as Array<Partial<Resource> | null>).flatMap((r, i) => {
    if (r?.type !== 'archive' || typeof r.source !== 'object' || r.source === null || !('object' in r.source) || typeof r.source.object !== 'string' || typeof r.sha256 !== 'string') return [];
    return [{ i, id: String(r.id), object: r.source.object, sha256: r.sha256 }];
  });
}
