import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { ObjectStore } from '@nats-io/obj';
import { ARCHIVES_BUCKET } from '../link/wire.js';
import { lazy } from '../system/interop.js';
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
}

/** Gives the archive store when it is needed, or refuses ('no-link') saying why there is none. */
export type ArchiveObjectsProvider = () => Promise<ArchiveObjects>;

/** The store's "SHA-256=<base64url>" as hex; undefined for anything else. */
export function sha256OfDigest(digest: string): string | undefined {
  if (!digest.startsWith('SHA-256=')) return undefined;
  const bytes = Buffer.from(digest.slice('SHA-256='.length).replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  return bytes.length === 32 ? bytes.toString('hex') : undefined;
}

async function openBucket(nc: NatsConnection, create: boolean): Promise<ObjectStore> {
  const { Objm } = await lazy(import('@nats-io/obj'));
  const objm = new Objm(nc);
  try {
    return create ? await objm.create(ARCHIVES_BUCKET) : await objm.open(ARCHIVES_BUCKET);
  } catch (err) {
    throw new ArchiveRefused('fetch-failed', `the archive store (bucket ${ARCHIVES_BUCKET}) cannot be opened: ${(err as Error).message}`);
  }
}

function infoOf(info: { name: string; size: number; digest: string; deleted?: boolean } | null): ArchiveObjectInfo | undefined {
  if (!info || info.deleted) return undefined;
  const sha256 = sha256OfDigest(info.digest);
  if (!sha256) throw new ArchiveRefused('fetch-failed', `object '${info.name}' carries no sha256 digest (${info.digest})`);
  return { name: info.name, size: info.size, sha256 };
}

/** The archive store over a NATS connection (the link's own, or a command's). */
export function natsArchiveObjects(nc: NatsConnection): ArchiveObjects {
  let bucket: Promise<ObjectStore> | undefined;
  const store = () => (bucket ??= openBucket(nc, false));
  return {
    async info(name) {
      return infoOf(await (await store()).info(name));
    },
    async read(name) {
      const result = await (await store()).get(name);
      if (!result) return undefined;
      // The client checks the object's own digest at the end: a corrupt object errors the stream.
      result.error.catch(() => {});
      return result.data as unknown as AsyncIterable<Uint8Array>;
    },
  };
}

/** Uploads a file into the archive store (creating the bucket when missing); what the store then says of it. */
export async function putArchiveObject(nc: NatsConnection, name: string, file: string): Promise<ArchiveObjectInfo> {
  const bucket = await openBucket(nc, true);
  const stream = Readable.toWeb(createReadStream(file, { highWaterMark: 128 * 1024 })) as unknown as ReadableStream<Uint8Array>;
  const info = await bucket.put({ name }, stream);
  return infoOf(info)!;
}
