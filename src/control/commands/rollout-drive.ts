import { hostname } from 'node:os';
import type { NatsConnection } from '@nats-io/transport-node';
import { resumeNodes, type ReportHeard, type Rollout } from '../fleet/rollout.js';
import { FleetListener } from '../fleet/rollout-listen.js';
import type { RolloutStore } from '../fleet/rollout-store.js';
import { describeEvent, progressLine, type RolloutEvent } from '../fleet/rollout-view.js';
import { fleetReportVerifier } from '../fleet/trust.js';
import type { Enrolments } from '../../link/enrolment.js';
import { ROLLOUTS_BUCKET } from '../../link/wire.js';
import { refused } from '../../core/system/errors.js';
import type { CommandContext } from '../../cli/context.js';
import type { openDeclarations, NodeRecord } from './numbering.js';
import { drive, type Driver } from './rollout-run.js';
import { enrolledCurveKeys, Sealer } from './sealing.js';
import { copyMaker, labelsOf, type NodeValues } from '../fleet/node-values.js';

/** What a rollout is driven with once it runs: its store, the declarations' bucket, what the mesh held, the listener. */

export interface Opened {
  store: RolloutStore;
  kv: Awaited<ReturnType<typeof openDeclarations>>;
  /** What the mesh held for every node when the rollout began or was resumed: read once; a put that finds a key moved since reads that one again. */
  records: Map<string, NodeRecord>;
  seed: string;
  enrolments: Promise<Enrolments>;
  /** Listening already (a new rollout begins to listen while it chooses its nodes). */
  listener?: FleetListener;
  /** The per-node values each copy is rendered with as it is sent (read again at a resume). */
  values: NodeValues;
}

/** Each node's copy: the one kept for it (a rollback's), else the declaration rendered with its values. */
export async function copiesOf(r: Rollout, o: Opened): Promise<(node: string) => Record<string, unknown>> {
  const kept = r.declarations;
  if (kept) return (node) => kept[node] ?? r.declaration;
  return copyMaker(r.declaration, o.values, labelsOf((await o.enrolments).enrolled()));
}

/** Listens, takes a halted rollout up again where it stopped, and drives it with the terminal's display or JSON lines. */
export async function run(ctx: CommandContext, nc: NatsConnection, o: Opened, rollout: Rollout, revision: number, how: 'started' | 'resumed'): Promise<number> {
  const listener = o.listener ?? new FleetListener(nc, fleetReportVerifier(o.enrolments), new Set(Object.keys(rollout.nodes)));
  if (!o.listener) await listener.start();
  const nowMs = () => ctx.clock.now().getTime();
  const r = rollout.status === 'halted' ? await takenUp(listener, rollout, nowMs()) : rollout;
  const tty = !ctx.json && process.stdout.isTTY === true;
  let shown = false;
  const emit = (e: RolloutEvent) => {
    const line = ctx.json ? JSON.stringify(e) : describeEvent(e);
    if (line === undefined) return;
    if (shown) process.stdout.write('\r\x1b[K');
    shown = false;
    ctx.print(line);
  };
  const driver: Driver = {
    store: o.store,
    copy: { nc, kv: o.kv, file: r.file, fields: r.declaration, copyOf: await copiesOf(r, o), seed: o.seed, epochFlag: r.epoch, sealer: new Sealer(o.seed, enrolledCurveKeys(() => o.enrolments)), ...(r.signed ? { signed: r.signed } : {}) },
    listener,
    records: o.records,
    emit,
    progress: (now, elapsedMs) => {
      if (!tty) return;
      process.stdout.write(`\r\x1b[K${progressLine(now, elapsedMs)}`);
      shown = true;
    },
    nowMs,
    owner: { host: hostname(), pid: process.pid },
  };
  emit({ ...(how === 'started' ? { event: 'started' as const } : { event: 'resumed' as const }), id: r.id, file: r.file, digest: r.digest, nodes: Object.keys(r.nodes).length, waves: r.waves.map((w) => w.length), waitMs: r.waitMs, haltOn: r.haltOn });
  try {
    return await drive(driver, r, revision);
  } finally {
    listener.close();
  }
}

/** A halted rollout taken up again: what to send again judged by the trusted reports heard since. */
export async function takenUp(listener: FleetListener, halted: Rollout, nowMs: number): Promise<Rollout> {
  const { halt: _, ...rest } = halted;
  const settled = Object.entries(halted.nodes).filter(([, p]) => p.phase === 'failed' || p.phase === 'refused').map(([n]) => n);
  const trusted = new Map<string, ReportHeard>();
  for (const n of settled) if (await listener.trusted(n)) trusted.set(n, listener.reports.get(n)!);
  return { ...rest, status: 'running', nodes: resumeNodes(halted, trusted, nowMs) };
}

export async function readOrRefuse(store: RolloutStore, id: string): Promise<{ rollout: Rollout; revision: number }> {
  const found = await store.read(id);
  if (found) return found;
  const known = (await store.list()).slice(0, 10).map((r) => `${r.id} (${r.status}, ${r.file})`);
  throw refused(`no rollout ${id} in ${ROLLOUTS_BUCKET}`, [known.length ? `the newest it holds: ${known.join('; ')}` : 'it holds none']);
}

