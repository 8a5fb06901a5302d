import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../../src/engine/report/report.js';
import type { StepResult } from '../../src/engine/converge/handler-types.js';
import { fitReport, foldReports, sentReport, type SentReport } from '../../src/engine/report/sent.js';
import { Outbox } from '../../src/engine/report/outbox.js';
import { readable } from '../../src/engine/report/words.js';
import { scratch } from '../support/tree.js';

const step = (i: number, status: StepResult['status'], type: StepResult['type'] = 'file'): Report['steps'][number] =>
  readable({ resource: `r${i}`, type, target: `/srv/app/f${i}.conf`, verb: status === 'done' ? 'create' : 'none', changes: status === 'done' ? [{ kind: 'create' }] : [], status, ...(status === 'failed' ? { detail: 'EIO' } : {}) });

function report(sequence: number, steps: Report['steps'], over: Partial<Report> = {}): Report {
  return {
    node: 'web-1', sequence, trigger: 'delivery', declaration: { epoch: 1, sequence, digest: `sha256:${sequence}` }, mode: 'converged', outcome: 'converged',
    steps, said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:00:01.000Z', ...over,
  };
}

describe('the sent report', () => {
  it('lists what changed, failed, was held or skipped, and counts the unchanged by type', () => {
    const steps = [step(0, 'done'), step(1, 'unchanged'), step(2, 'unchanged', 'directory'), step(3, 'failed'), step(4, 'held'), step(5, 'skipped'), step(6, 'unchanged')];
    const sent = sentReport(report(1, steps));
    expect(sent.steps.map((s) => s.status)).toEqual(['done', 'failed', 'held', 'skipped']);
    expect(sent.unchanged).toEqual({ file: 2, directory: 1 });
    expect(sent.counts).toEqual({ done: 1, unchanged: 3, failed: 1, held: 1, skipped: 1 });
  });

  it('a no-op over 10,000 files is a few hundred bytes', () => {
    const sent = sentReport(report(1, Array.from({ length: 10_000 }, (_, i) => step(i, 'unchanged'))));
    expect(Buffer.from(JSON.stringify(sent)).length).toBeLessThan(1000);
  });

  it('is never larger than the limit; past it, it says how many steps it left out, how large it was, and where the rest is', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3000 }), fc.integer({ min: 600, max: 200_000 }), fc.integer({ min: 0, max: 50 }), (changed, limit, said) => {
        const r = sentReport(report(7, Array.from({ length: changed }, (_, i) => step(i, i % 7 === 0 ? 'failed' : 'done')), { said: Array.from({ length: said }, (_, i) => `line ${i} `.repeat(40)) }));
        const bytes = fitReport(r, limit);
        expect(bytes.length).toBeLessThanOrEqual(limit);
        const back = JSON.parse(bytes.toString('utf8')) as SentReport;
        expect(back.sequence).toBe(7);
        expect(back.counts).toEqual(r.counts);
        if (back.omitted) {
          expect(back.omitted.steps).toBe(changed - back.steps.length);
          expect(back.omitted.bytes).toBeGreaterThan(limit);
          expect(back.omitted.where).toMatch(/status --last-report/);
        } else expect(back.steps.length).toBe(changed);
      }),
      { numRuns: 60 },
    );
  });

  it('folds reports into the newest, carrying how many, their sequences, outcomes, step counts and errors', () => {
    const reports = [
      sentReport(report(3, [step(0, 'done')])),
      sentReport(report(4, [step(0, 'failed')], { outcome: 'failed', error: { resource: 'r0', message: 'EIO' } })),
      sentReport(report(5, [step(0, 'done'), step(1, 'done')])),
    ];
    const folded = foldReports(reports);
    expect(folded.sequence).toBe(5);
    expect(folded.folded).toMatchObject({ reports: 2, first: 3, last: 4, outcomes: { converged: 1, failed: 1 }, steps: { done: 1, failed: 1 }, errors: [{ sequence: 4, outcome: 'failed', message: 'EIO' }] });
    // Folding a folded report again keeps the count of everything folded so far.
    const again = foldReports([folded, sentReport(report(9, []))]);
    expect(again.folded).toMatchObject({ reports: 3, first: 3, last: 5 });
  });
});

describe('the outbox', () => {
  it('is bounded by count: past it the oldest are folded, sequences stay increasing, nothing vanishes without a trace', () => {
    const s = scratch('mesh-host-outbox-');
    try {
      const outbox = new Outbox(s.dir, { maxReports: 10 });
      for (let i = 1; i <= 100; i++) outbox.add(report(i, [step(i, 'done')]));
      const waiting = outbox.pending();
      expect(waiting.length).toBeLessThanOrEqual(10);
      expect(waiting.at(-1)).toBe(100);
      expect(waiting.every((x, i) => i === 0 || x > waiting[i - 1]!)).toBe(true);
      // Every report is either waiting itself or counted in a folded one.
      let accounted = 0;
      for (const seq of waiting) accounted += 1 + (outbox.read(seq).folded?.reports ?? 0);
      expect(accounted).toBe(100);
      // The whole reports kept on the host are bounded too; the newest is there with every step.
      expect(readdirSync(join(s.dir, 'reports')).length).toBe(16);
      expect(outbox.wholeReport()?.sequence).toBe(100);
    } finally {
      s.cleanup();
    }
  });

  it('is bounded by bytes, and a folded report gone from the outbox reads as nothing to send', () => {
    const s = scratch('mesh-host-outbox-');
    try {
      const outbox = new Outbox(s.dir, { maxBytes: 40_000 });
      for (let i = 1; i <= 40; i++) outbox.add(report(i, Array.from({ length: 20 }, (_, j) => step(j, 'done'))));
      expect(outbox.size().bytes).toBeLessThanOrEqual(40_000 + 6_000);
      const waiting = outbox.pending();
      const gone = Array.from({ length: 40 }, (_, i) => i + 1).filter((x) => !waiting.includes(x));
      expect(gone.length).toBeGreaterThan(0);
      expect(outbox.message(gone[0]!)).toBeUndefined();
      expect(outbox.message(waiting[0]!, 2000)!.length).toBeLessThanOrEqual(2000);
    } finally {
      s.cleanup();
    }
  });
});
