import { execFileSync } from 'node:child_process';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { sign } from '../src/core/declaration/envelope.js';
import { DECLARATIONS_BUCKET } from '../src/link/wire.js';
import type { Resource } from '../src/core/declaration/schema.js';
import { enrolledHost, type HostFixture } from '../test/support/daemon.js';

/** One delivery as the control side saw it: from its put to the report heard, in ms, and both instants (epoch ms). */
export interface Delivered {
  ms: number;
  putAt: number;
  heardAt: number;
}

export interface LinkedHost {
  host: HostFixture;
  /** The daemon's process id. */
  pid: number;
  /** Puts the next sequence (signed beforehand) and waits for its report. */
  deliver(): Promise<Delivered>;
  close(): Promise<void>;
}

/** The no-op declaration the link benchmark delivers: a folder and 100 files in it. */
export const LINK_FILES: Resource[] = [{ type: 'directory', id: 'app', path: '/srv/app' }, ...Array.from({ length: 100 }, (_, i): Resource => ({ type: 'file', id: `f${i}`, path: `/srv/app/f${i}.conf`, content: `key = ${i}\n` }))];

const epochNow = () => performance.timeOrigin + performance.now();

function daemonPid(): number {
  // The daemon is the only `mesh-host run` child of this process: found by its command line.
  const out = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'mesh-host run'], { encoding: 'utf8' });
  return Number(out.trim().split('\n')[0]);
}

/** An enrolled daemon (run with the node flags given, or as `program`, at the default level) converged to LINK_FILES, and the control side's way to deliver to it. */
export async function linkedHost(url: string, nodeFlags: string[], program?: string): Promise<LinkedHost> {
  const h = await enrolledHost([url], { resources: LINK_FILES, config: { reconcileIntervalMs: 3_600_000 }, nodeFlags, logLevel: 'info', ...(program ? { program } : {}) });
  let nc: NatsConnection | undefined;
  try {
    await h.start();
    await h.waitForReports(1);
    const pid = daemonPid();
    nc = await connect({ servers: [url] });
    const waiting = new Map<number, (at: number) => void>();
    nc.subscribe(`mesh.report.${h.node}`, {
      callback: (_e, m) => {
        const at = epochNow();
        const r = JSON.parse(m.string()) as { declaration?: { sequence: number } };
        waiting.get(r.declaration?.sequence ?? -1)?.(at);
      },
    });
    const kv = await new Kvm(nc).open(DECLARATIONS_BUCKET);
    let sequence = 1;
    const deliver = async (): Promise<Delivered> => {
      const s = ++sequence;
      // Signed before the clock starts: what is measured is the host, not the control side's signing.
      const envelope = JSON.stringify(await sign(Buffer.from(JSON.stringify({ version: 1, node: h.node, mode: 'converged', epoch: 1, sequence: s, resources: LINK_FILES })), h.seed));
      const arrived = new Promise<number>((resolve) => waiting.set(s, resolve));
      const putAt = epochNow();
      const t = performance.now();
      await kv.put(h.node, envelope);
      const heardAt = await arrived;
      const ms = performance.now() - t;
      waiting.delete(s);
      return { ms, putAt, heardAt };
    };
    const connection = nc;
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await connection.close();
      await h.cleanup();
    };
    return { host: h, pid, deliver, close };
  } catch (err) {
    await nc?.close();
    await h.cleanup();
    throw err;
  }
}
