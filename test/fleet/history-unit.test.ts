import { describe, expect, it } from 'vitest';
import { declarationChanges, formatChanges, redacted } from '../../src/control/fleet/declaration-diff.js';
import { heldAt, lastGood, withOutcomes, type HistoryEntry } from '../../src/control/fleet/history.js';

const put = (sequence: number, at: string, resources: object[], digest = `sha256:${sequence}`): HistoryEntry => ({ node: 'n', position: sequence, at, operation: 'put', mark: { sequence }, digest, declaration: { version: 1, node: 'n', sequence, mode: 'converged', resources } });
const report = (sequence: number, outcome: string, n: number, digest?: string) => ({ about: { sequence, ...(digest ? { digest } : {}) }, outcome, at: `t${n}`, report: n });
const conf = (content: string) => ({ type: 'file', id: 'conf', path: '/c', content });

describe("a node's history, pure", () => {
  it('each put gets the outcome of the first report about it (number and digest); the newest unreported is pending, an older one superseded', () => {
    const entries = [put(1, 'a', [conf('1')]), put(2, 'b', [conf('2')]), put(3, 'c', [conf('3')]), put(4, 'd', [conf('4')])];
    const done = withOutcomes(entries, [report(1, 'converged', 1), report(1, 'failed', 2), report(2, 'refused', 3, 'sha256:2'), report(3, 'converged', 4, 'sha256:other')]);
    expect(done.map((e) => e.outcome)).toEqual([
      { kind: 'reported', outcome: 'converged', at: 't1', report: 1, reports: 2 },
      { kind: 'reported', outcome: 'refused', at: 't3', report: 3, reports: 1 },
      // A report about another declaration with the same number says nothing of this one.
      { kind: 'superseded' },
      { kind: 'pending' },
    ]);
  });

  it('the last good one is the newest earlier converged that differs from what the key holds; what was held at a moment is the newest put before it', () => {
    const entries = withOutcomes([put(1, 'a', [conf('1')]), put(2, 'b', [conf('2')]), put(3, 'c', [conf('1')]), put(4, 'd', [conf('bad')])], [report(1, 'converged', 1), report(2, 'converged', 2), report(3, 'converged', 3), report(4, 'failed', 4)]);
    expect(lastGood(entries)?.mark?.sequence).toBe(3);
    // One that says what the key holds now (bar its number) is not a way back.
    const same = withOutcomes([put(1, 'a', [conf('1')]), put(2, 'b', [conf('2')]), put(3, 'c', [conf('2')])], [report(1, 'converged', 1), report(2, 'converged', 2), report(3, 'converged', 3)]);
    expect(lastGood(same)?.mark?.sequence).toBe(1);
    expect(lastGood(withOutcomes([put(1, 'a', [])], []))).toBeUndefined();
    expect(heldAt(entries, 'c')?.mark?.sequence).toBe(2);
    expect(heldAt(entries, 'a')).toBeUndefined();
  });
});

describe('declarations compared and shown', () => {
  const secret = (content: string) => ({ type: 'file', id: 'token', path: '/t', content, sensitive: true });
  const box = (env: Record<string, string>) => ({ type: 'container', id: 'app', name: 'app', env, sensitiveEnv: ['PASSWORD'] });

  it('never shows a sensitive content or env value, and leaves the rest as it is', () => {
    const d = { version: 1, resources: [conf('a'), secret('hunter2'), box({ PASSWORD: 'hunter3', MODE: 'fast' })] };
    expect(redacted(d).resources).toEqual([conf('a'), secret('(sensitive: not shown)'), box({ PASSWORD: '(sensitive: not shown)', MODE: 'fast' })]);
    expect(d.resources[1]).toEqual(secret('hunter2'));
  });

  it('goes resource by resource: added, removed, changed field by field, a content as a unified diff, a sensitive one only said to change', () => {
    const a = { version: 1, mode: 'converged', sequence: 1, resources: [conf('one\ntwo\n'), secret('hunter2'), box({ PASSWORD: 'x', MODE: 'slow' }), { type: 'directory', id: 'old', path: '/old' }] };
    const b = { version: 1, mode: 'adopted', sequence: 2, resources: [conf('one\nthree\n'), secret('hunter3'), box({ PASSWORD: 'y', MODE: 'fast' }), { type: 'directory', id: 'new', path: '/new', mode: '0750' }] };
    const lines = formatChanges(declarationChanges(a, b));
    expect(lines).toEqual([
      '~ declaration',
      '    mode: converged → adopted',
      '- directory old /old',
      '~ file conf /c',
      '    content:',
      '      @@ -1,2 +1,2 @@',
      '       one',
      '      -two',
      '      +three',
      '~ file token /t',
      '    content: changed (sensitive: not shown)',
      '~ container app app',
      '    env.PASSWORD: changed (sensitive: not shown)',
      '    env.MODE: slow → fast',
      '+ directory new /new',
      '    path: /new',
      '    mode: 0750',
    ]);
    expect(lines.join('\n')).not.toMatch(/hunter|PASSWORD: [xy]/);
    expect(formatChanges(declarationChanges(a, { ...a, sequence: 5 }))).toEqual(['no difference']);
  });
});
