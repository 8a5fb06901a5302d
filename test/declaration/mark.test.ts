import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareOrder, describeOrder, epochIn, orderIn, sameOrder, type Order } from '../../src/core/declaration/order.js';
import { foldReports, sentReport } from '../../src/engine/report/sent.js';
import type { Report } from '../../src/engine/report/report.js';
import { formatFleet } from '../../src/control/fleet/fleet-format.js';
import type { FleetRow } from '../../src/control/fleet/fleet.js';
import { reportLines } from '../../src/control/fleet/report-lines.js';
import { hostStatusLines } from '../../src/control/fleet/host-status-lines.js';
import { keySeen } from '../../src/control/fleet/fleet-read.js';
import { entriesOf, withOutcomes } from '../../src/control/fleet/history.js';
import { declarationView } from '../../src/control/serve/node.js';
import { mark as pageMark } from '../../src/control/page/page-format.js';
import { judge } from '../../src/control/fleet/rollout.js';

const project = resolve(import.meta.dirname, '../..');

const envelopeOf = (declaration: object) => Buffer.from(JSON.stringify({ payload: Buffer.from(JSON.stringify(declaration)).toString('base64'), key: 'K', signature: 'S' }));

describe('the mark: one reader, one print, one compare', () => {
  it('reads (epoch, sequence) out of anything untyped, and nothing without a numeric sequence', () => {
    expect(orderIn({ epoch: 2, sequence: 5, node: 'a' })).toEqual({ epoch: 2, sequence: 5 });
    expect(orderIn({ sequence: 5 })).toEqual({ sequence: 5 });
    // An epoch that is not a number is no epoch, and leaves no key behind.
    expect(Object.keys(orderIn({ epoch: '2', sequence: 5 })!)).toEqual(['sequence']);
    for (const v of [undefined, null, 3, 'x', {}, { epoch: 1 }, { sequence: '5' }]) expect(orderIn(v)).toBeUndefined();
    expect(epochIn({ epoch: 3 })).toBe(3);
    expect(epochIn({ epoch: '3' })).toBeUndefined();
    expect(epochIn(null)).toBeUndefined();
  });

  it('prints a mark one way', () => {
    expect(describeOrder({ epoch: 2, sequence: 5 })).toBe('epoch 2, sequence 5');
    expect(describeOrder({ sequence: 5 })).toBe('sequence 5');
  });

  it('orders by the epoch when both carry one, else by the sequence alone', () => {
    expect(compareOrder({ epoch: 2, sequence: 1 }, { epoch: 1, sequence: 9 })).toBeGreaterThan(0);
    expect(compareOrder({ epoch: 1, sequence: 3 }, { epoch: 1, sequence: 4 })).toBeLessThan(0);
    // Without an epoch on one side, an epoch is not "0": the sequence decides.
    expect(compareOrder({ sequence: 4 }, { epoch: 1, sequence: 3 })).toBeGreaterThan(0);
    expect(compareOrder({ sequence: 4 }, { sequence: 4 })).toBe(0);
    expect(sameOrder({ epoch: 1, sequence: 4 }, { epoch: 1, sequence: 4 })).toBe(true);
    expect(sameOrder({ sequence: 4 }, { epoch: 1, sequence: 4 })).toBe(false);
    expect(sameOrder({ epoch: 0, sequence: 4 }, { sequence: 4 })).toBe(false);
  });
});

describe('every place reads, prints and compares the mark through the one module', () => {
  const a: Order = { epoch: 3, sequence: 7 };
  const said = describeOrder(a);

  it('the fleet view and its status lines print it', () => {
    const row = { node: 'web-1', state: 'behind', mode: 'converged', lastOutcome: null, lastApplied: { ...a, digest: 'd' }, newest: { epoch: 3, sequence: 8, digest: 'e' }, reportSequence: 4, trustVersion: null, trustBehind: false, heartbeat: null, problems: [] } as unknown as FleetRow;
    const table = formatFleet([row]);
    expect(table).toContain(said);
    expect(table).toContain(describeOrder({ epoch: 3, sequence: 8 }));
    expect(hostStatusLines({ node: 'web-1', lastApplied: { ...a, at: 'now' }, kept: { epoch: 3, sequence: 8 } })).toEqual(expect.arrayContaining([`last applied:    ${said}, at now`, `newest held:     ${describeOrder({ epoch: 3, sequence: 8 })} (not applied yet)`]));
    // The same place in the order, held and applied, is not said twice.
    expect(hostStatusLines({ node: 'web-1', lastApplied: { ...a, at: 'now' }, kept: { ...a } }).join('\n')).not.toContain('newest held');
  });

  it('the page prints it', () => {
    expect(pageMark(a)).toBe(said);
    expect(pageMark(null)).toBe('–');
  });

  it('a report read by meshctl prints it, and reads it typed from the report', () => {
    expect(reportLines({ node: 'web-1', sequence: 4, outcome: 'converged', trigger: 'delivery', declaration: { ...a, digest: 'd' } } as never)[0]).toContain(`, declaration ${said}`);
    expect(reportLines({ node: 'web-1', sequence: 4, outcome: 'refused', trigger: 'delivery', declaration: { sequence: 'x' } } as never)[0]).not.toContain('declaration');
  });

  it('the key, the history and the page read it out of a signed declaration', () => {
    const bytes = envelopeOf({ version: 1, node: 'web-1', mode: 'converged', ...a, resources: [] });
    expect(keySeen({ subject: '$KV.x.web-1', bytes }).newest).toMatchObject(a);
    expect(declarationView(bytes)?.mark).toMatchObject(a);
    const [entry] = entriesOf('web-1', [{ subject: 'x.web-1', streamSequence: 1, storedAt: 'now', bytes, operation: 'put' } as never]);
    expect(entry!.mark).toEqual(a);
    // A report about the same sequence without the epoch is not about this put: the one sameOrder decides.
    const reported = withOutcomes([entry!], [{ about: { sequence: 7 }, outcome: 'converged', at: 'now', report: 1 }]);
    expect(reported[0]!.outcome?.kind).not.toBe('reported');
  });

  it('a rollout matches a report to its copy with the one comparison', () => {
    const progress = { node: 'web-1', phase: 'sent', mark: a, waitFromMs: 0 } as never;
    expect(judge(progress, { report: { sequence: 9, declaration: { sequence: 7 }, outcome: 'converged' } }, 1, 60_000).phase).toBe('sent');
    expect(judge(progress, { report: { sequence: 9, declaration: { ...a }, outcome: 'converged' } }, 1, 60_000).phase).toBe('converged');
    expect(judge(progress, {}, 120_000, 60_000).error).toContain(`no report of ${said}`);
  });

  it('folded reports keep their oldest and newest declaration by compareOrder, not with a missing epoch taken as 0', () => {
    const report = (sequence: number, declaration: Order): Report => ({
      node: 'web-1', sequence, trigger: 'delivery', declaration: { ...declaration, digest: `sha256:${sequence}` }, mode: 'converged', outcome: 'converged',
      steps: [], said: [], facts: { held: [], links: [], filters: [], foundFirewall: null }, startedAt: '2026-01-01T00:00:00.000Z', finishedAt: '2026-01-01T00:00:01.000Z',
    });
    const folded = foldReports([sentReport(report(1, { sequence: 4 })), sentReport(report(2, { epoch: 1, sequence: 3 })), sentReport(report(3, { epoch: 1, sequence: 9 }))]);
    const kept = folded.folded!.declarations.map((d) => describeOrder(d));
    expect(kept).toEqual([describeOrder({ epoch: 1, sequence: 3 }), describeOrder({ sequence: 4 })]);
  });

  it('no file of src/ reads an epoch by hand, sorts with a missing epoch as 0, or prints a mark of its own', () => {
    const files: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (/\.ts$/.test(name) && !name.endsWith('.d.ts')) files.push(path);
      }
    };
    walk(join(project, 'src'));
    walk(join(project, 'machines'));
    const own = join(project, 'src/core/declaration/order.ts');
    const offences = files
      .filter((f) => f !== own)
      .flatMap((f) => {
        const text = readFileSync(f, 'utf8');
        return [/typeof [\w.?]+\.epoch\b/, /\.epoch \?\? 0/, /`[^`]*epoch \$\{[^`]*sequence \$\{/, /\$\{[\w.?]+\.epoch\}:\$\{/, /function describeOrder|const describeOrder|describeMark|markText/]
          .filter((re) => re.test(text))
          .map((re) => `${relative(project, f)}: ${re}`);
      });
    expect(offences).toEqual([]);
  });
});
