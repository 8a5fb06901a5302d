import type { MsgHdrs } from '@nats-io/transport-node';
import { DECLARATIONS_STREAM } from './wire.js';
import { markStep } from '../core/system/trace.js';

/** What a notice of a put says: nothing to read (a delete), or read, and the revision it names when it names one. */
export type Notice = { read: false } | { read: true; revision?: number };

/**
 * What a message heard on a node's key subject, or on its site's notice subject, asks of the host.
 * Deletes and purges (the KV-Operation header, kept in a site's notice) say nothing to apply. A site's
 * notice names the revision: its leaf took the put from the hub's bucket, whose sequences the site's
 * copy keeps (`Nats-Stream-Source: KV_mesh_declarations:<hash> <sequence>`); a put heard at the hub
 * names none.
 */
export function noticeOf(headers: MsgHdrs | undefined): Notice {
  const operation = headers?.get('KV-Operation');
  if (operation === 'DEL' || operation === 'PURGE') return { read: false };
  const [source, sequence] = (headers?.get('Nats-Stream-Source') ?? '').split(' ');
  const revision = Number(sequence);
  // A source in another domain is named with a hash of its API after a colon.
  return source?.split(':')[0] === DECLARATIONS_STREAM && Number.isSafeInteger(revision) && revision > 0 ? { read: true, revision } : { read: true };
}

/** What the reads of heard puts need of the link. */
export interface HeardReadsDeps {
  /** Reads the key once, delivering a newer revision. */
  read(): Promise<unknown>;
  /** The newest revision delivered. */
  revision(): number;
  /** Waits, or ends early when the link closes. */
  pause(ms: number): Promise<void>;
  closed(): boolean;
}

const ATTEMPTS = 10;

/**
 * Reads the key when puts are heard, until what they announce is delivered. The notice can come before
 * the stream has stored the put (or, in a cluster, before the replica that answers the read has it), so
 * an unchanged read is tried again a few times, backing off; a notice of a put the stream refused (a
 * compare-and-set that lost) never brings a new revision, and the reads stop after ~25 s. A notice that
 * names a revision already delivered asks for nothing: after a site's uplink comes back, its copy
 * catches up a put at a time and each one is announced, but one read of the newest answers them all.
 */
export class HeardReads {
  /** An unnamed put was heard since the last read began: read until something newer comes. */
  private heardAgain = false;
  /** The newest revision a notice named. */
  private named = 0;
  private reading = false;

  constructor(private readonly deps: HeardReadsDeps) {}

  /** The subscription's callback on the key's subjects, as it is: a message heard goes from NATS to here. */
  readonly message = (err: unknown, msg: { headers?: MsgHdrs | undefined }): void => {
    if (err || this.deps.closed()) return;
    const notice = noticeOf(msg.headers);
    if (notice.read) markStep('notice');
    this.heard(notice);
  };

  heard(notice: Notice): void {
    if (!notice.read) return;
    if (notice.revision === undefined) this.heardAgain = true;
    else if (notice.revision > this.deps.revision()) this.named = Math.max(this.named, notice.revision);
    else return;
    if (!this.reading) void this.readAll();
  }

  private wanted(): boolean {
    return this.heardAgain || this.named > this.deps.revision();
  }

  private async readAll(): Promise<void> {
    const { deps } = this;
    this.reading = true;
    try {
      while (this.wanted() && !deps.closed()) {
        const unnamed = this.heardAgain;
        this.heardAgain = false;
        const before = deps.revision();
        const done = () => (!unnamed || deps.revision() > before) && deps.revision() >= this.named;
        let attempt = 0;
        for (; attempt < ATTEMPTS && !deps.closed() && !this.heardAgain; attempt++) {
          await deps.read();
          if (done()) break;
          await deps.pause(25 * 2 ** attempt);
        }
        // Given up on a named revision that never came: the timer's reads are left to find it.
        if (attempt === ATTEMPTS) this.named = 0;
      }
    } finally {
      // Set in the same turn as the loop's last look: a notice after it starts a new read.
      this.reading = false;
    }
  }
}
