import { decide, judge, type NodeProgress, type ReportHeard, type Rollout } from '../fleet/rollout.js';
import type { FleetListener } from '../fleet/rollout-listen.js';
import type { RolloutStore } from '../fleet/rollout-store.js';
import type { RolloutEvent } from '../fleet/rollout-view.js';
import { isRevisionConflict } from '../../link/revision.js';
import { EXIT, refused } from '../../core/system/errors.js';
import type { NodeRecord } from './numbering.js';
import { sendCopies, type CopyContext, type SendLine } from './send-many.js';

/** What drives a rollout: passed in, so the loop itself holds nothing of its own. */
export interface Driver {
  store: RolloutStore;
  copy: CopyContext;
  listener: FleetListener;
  /** Every node's key and latest report as read when the rollout began or was resumed (a put whose key moved since reads it again). */
  records: Map<string, NodeRecord>;
  emit(e: RolloutEvent): void;
  /** Called at least once a second while the rollout waits: the terminal's progress line. */
  progress(r: Rollout, elapsedMs: number): void;
  nowMs(): number;
  owner: { host: string; pid: number };
}

/** The record is written at least this often while waiting (the owner's sign of life, and the moment an abort is noticed)… */
const BEAT_MS = 5000;
/** …and when a node settled, at most this often: a thousand reports are a few writes, not a thousand. */
const SETTLED_WRITE_MS = 1000;

/** The rollout was aborted (or taken over) while this meshctl drove it. */
class Stopped extends Error {
  constructor(readonly by: Rollout | undefined) {
    super('stopped');
  }
}

/**
 * Drives a rollout from where its record stands until it is done or halts: exit 0 when every wave
 * converged, 1 when it halted or was aborted. The record is written before each wave's sends (its nodes
 * `sending`) and after them (`sent`, with each copy's number), so a meshctl killed at any point is
 * resumed without losing or repeating a send.
 */
export async function drive(d: Driver, start: Rollout, revision: number): Promise<number> {
  let r = start;
  let rev = revision;
  const startedMs = d.nowMs();
  let waveStartedMs = startedMs;
  let savedMs = 0;
  let dirty = false;
  const save = async () => {
    const at = new Date(d.nowMs()).toISOString();
    r = { ...r, updatedAt: at, owner: { ...d.owner, beatAt: at } };
    try {
      rev = await d.store.write(r, rev);
    } catch (err) {
      if (!isRevisionConflict(err)) throw err;
      throw new Stopped((await d.store.read(r.id))?.rollout);
    }
    savedMs = d.nowMs();
    dirty = false;
  };
  try {
    d.emit({ event: 'wave', id: r.id, wave: r.wave + 1, of: r.waves.length, nodes: r.waves[r.wave]! });
    for (;;) {
      const decision = decide(r);
      if (decision.kind === 'send') {
        const sent = await sendWave(d, r, decision.nodes, async (nodes) => {
          r = { ...r, nodes };
          await save();
        });
        r = { ...r, nodes: sent };
        await save();
      } else if (decision.kind === 'wait') {
        const settled = await settle(d, r, decision.nodes);
        r = { ...r, nodes: settled.nodes };
        dirty ||= settled.changed;
        if (dirty && d.nowMs() - savedMs >= SETTLED_WRITE_MS) await save();
        else if (d.nowMs() - savedMs >= BEAT_MS) await save();
        if (settled.changed) continue;
        d.progress(r, d.nowMs() - startedMs);
        await d.listener.take(Math.max(0, Math.min(decision.deadlineMs - d.nowMs(), 1000)));
      } else if (decision.kind === 'advance') {
        const done = r.waves[r.wave]!;
        d.emit({ event: 'wave-done', id: r.id, wave: r.wave + 1, of: r.waves.length, converged: done.filter((n) => r.nodes[n]?.phase === 'converged').length, elapsedMs: d.nowMs() - waveStartedMs });
        r = { ...r, wave: decision.wave };
        waveStartedMs = d.nowMs();
        await save();
        d.emit({ event: 'wave', id: r.id, wave: r.wave + 1, of: r.waves.length, nodes: r.waves[r.wave]! });
      } else if (decision.kind === 'halt') {
        const p = r.nodes[decision.node]!;
        r = { ...r, status: 'halted', halt: { node: decision.node, phase: decision.phase, wave: r.wave, ...(p.resource ? { resource: p.resource } : {}), ...(p.error ? { error: p.error } : {}) } };
        await save();
        const untouched = r.waves.slice(r.wave + 1).reduce((n, w) => n + w.length, 0);
        d.emit({ event: 'halted', id: r.id, wave: r.wave + 1, of: r.waves.length, node: decision.node, phase: decision.phase, ...(p.resource ? { resource: p.resource } : {}), ...(p.error ? { error: p.error } : {}), untouched });
        return EXIT.failed;
      } else {
        d.emit({ event: 'wave-done', id: r.id, wave: r.wave + 1, of: r.waves.length, converged: r.waves[r.wave]!.filter((n) => r.nodes[n]?.phase === 'converged').length, elapsedMs: d.nowMs() - waveStartedMs });
        r = { ...r, status: 'done' };
        await save();
        await d.store.release(r.id);
        const nodes = Object.keys(r.nodes).length;
        d.emit({ event: 'done', id: r.id, nodes, converged: Object.values(r.nodes).filter((p) => p.phase === 'converged').length, elapsedMs: d.nowMs() - startedMs });
        return EXIT.ok;
      }
    }
  } catch (err) {
    if (!(err instanceof Stopped)) throw err;
    if (err.by?.status === 'aborted') {
      d.emit({ event: 'aborted', id: r.id, ...(err.by.owner ? { by: `${err.by.owner.host} pid ${err.by.owner.pid}` } : {}) });
      return EXIT.failed;
    }
    throw refused(`rollout ${r.id} was written by another meshctl while this one drove it${err.by?.owner ? ` (${err.by.owner.host} pid ${err.by.owner.pid})` : ''}: this one stops and leaves it to that one`);
  }
}

/**
 * One wave's sends: its nodes written `sending` first, then each copy put as the send to many puts it
 * (a node whose key holds the declaration already is not sent it again, unless it failed and the
 * rollout was resumed), then each node `sent` with the number to await, or refused.
 */
async function sendWave(d: Driver, r: Rollout, nodes: string[], saveNodes: (nodes: Record<string, NodeProgress>) => Promise<void>): Promise<Record<string, NodeProgress>> {
  const before = { ...r.nodes };
  for (const n of nodes) {
    const heard = d.listener.reports.get(n)?.sequence;
    before[n] = { ...before[n], phase: 'sending', ...(heard === undefined ? {} : { reportBefore: heard }) };
  }
  await saveNodes(before);
  const lines = await sendCopies(d.copy, nodes, d.records, (n) => before[n]?.again === true);
  const after = { ...before };
  const now = d.nowMs();
  for (const line of lines) after[line.node] = sentAs(d, before[line.node]!, line, now);
  return after;
}

function sentAs(d: Driver, p: NodeProgress, line: SendLine, now: number): NodeProgress {
  const { again, ...rest } = p;
  if (line.outcome === 'refused') {
    d.emit({ event: 'node', node: line.node, phase: 'refused', error: `not sent: ${line.reason}` });
    return { ...rest, phase: 'refused', error: `not sent: ${line.reason}` };
  }
  d.emit(line.outcome === 'sent' ? { event: 'sent', node: line.node, mark: line.mark, revision: line.revision, ...(again ? { again: true as const } : {}) } : { event: 'unchanged', node: line.node, mark: line.mark });
  return { ...rest, phase: 'sent', mark: line.mark, waitFromMs: now };
}

/**
 * Every awaited node judged by what the listener holds now; what changed is said. A report that would
 * settle a node is taken only once its signature is checked.
 */
async function settle(d: Driver, r: Rollout, waiting: string[]): Promise<{ nodes: Record<string, NodeProgress>; changed: boolean }> {
  const nodes = { ...r.nodes };
  let changed = false;
  for (const n of waiting) {
    const was = nodes[n]!;
    const paused = d.listener.paused.get(n);
    const heard = (report: ReportHeard | undefined) => judge(was, { ...(report ? { report } : {}), ...(paused === undefined ? {} : { paused }) }, d.nowMs(), r.waitMs);
    let now = heard(d.listener.reports.get(n));
    if (now.report !== undefined && now.phase !== was.phase && !(await d.listener.trusted(n))) now = heard(undefined);
    if (now.paused && !was.paused) d.emit({ event: 'paused', node: n, ...now.paused });
    if (!now.paused && was.paused && now.phase === 'sent') d.emit({ event: 'unpaused', node: n });
    const deferredNow = now.phase === 'sent' && JSON.stringify(now.deferred) !== JSON.stringify(was.deferred);
    if (deferredNow && now.deferred) d.emit({ event: 'deferred', node: n, deferred: now.deferred });
    if (now.phase !== was.phase) {
      d.emit({ event: 'node', node: n, phase: now.phase as 'converged', ...(now.report === undefined ? {} : { report: now.report }), ...(now.resource ? { resource: now.resource } : {}), ...(now.error ? { error: now.error } : {}) });
      changed = true;
    }
    if (now.paused?.since !== was.paused?.since || deferredNow) changed = true;
    nodes[n] = now;
  }
  for (const u of d.listener.untrusted.splice(0)) d.emit({ event: 'untrusted', ...u });
  return { nodes, changed };
}
