import { afterEach, describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import { declaration, testHost, type TestHost } from '../support/host.js';
import { formatPlan } from '../../src/engine/report/report.js';
import type { Change } from '../../src/engine/converge/changes.js';
import { readable } from '../../src/engine/report/words.js';

const file = (n: number, verb: 'none' | 'create' | 'update' = 'none', changes: Change[] = []) => readable({ resource: `f${n}`, type: 'file', target: `/srv/f${n}.conf`, verb, changes });

describe('the readable plan', () => {
  it('lists the steps to take under a count against the whole plan, and leaves out what is already as declared', () => {
    const steps = [file(1), file(2, 'create', [{ kind: 'create' }]), file(3), file(4, 'update', [{ kind: 'content', lines: { added: 1, removed: 1 } }, { kind: 'mode', from: '0644', to: '0640' }])];
    expect(formatPlan({ steps }).split('\n')).toEqual([
      'plan: 2 of 4 steps to take',
      '  create /srv/f2.conf',
      '  update /srv/f4.conf: content (+1 −1 lines), mode 0644→0640',
    ]);
  });

  it('a no-op of many files is one line', () => {
    expect(formatPlan({ steps: Array.from({ length: 1000 }, (_, n) => file(n)) })).toBe('plan: 0 of 1000 steps to take');
  });

  it('says when nothing is declared', () => {
    expect(formatPlan({ steps: [] })).toBe('plan: nothing declared, nothing to do');
  });
});

describe('the printed plan of an apply', () => {
  let hosts: TestHost[] = [];
  afterEach(() => {
    hosts.forEach((h) => h.cleanup());
    hosts = [];
  });

  it('reads the same from its summary (no step made for what is as declared) as from its whole step list, and the summary is not in its JSON', async () => {
    const h = testHost();
    hosts.push(h);
    const files = (content: (n: number) => string): Resource[] => [
      { type: 'directory', id: 'app', path: '/srv/app' },
      ...Array.from({ length: 6 }, (_, n): Resource => ({ type: 'file', id: `f${n}`, path: `/srv/app/f${n}.conf`, content: content(n) })),
    ];
    expect((await h.apply(declaration([...files(() => 'a\n'), { type: 'file', id: 'gone', path: '/srv/app/gone.conf', content: 'bye\n' }]))).kind).toBe('applied');
    const planned = await h.apply(declaration(files((n) => (n % 2 === 0 ? 'b\n' : 'a\n')), { sequence: 2 }), { dryRun: true });
    if (planned.kind !== 'planned') throw new Error(`planned expected, got ${planned.kind}`);
    expect(planned.plan.summary?.total).toBe(8);
    const printed = formatPlan(planned.plan);
    expect(printed.split('\n')[0]).toBe('plan: 4 of 8 steps to take');
    expect(printed).toBe(formatPlan({ steps: planned.plan.steps }));
    expect(Object.keys(JSON.parse(JSON.stringify(planned.plan)))).toEqual(['steps']);
  });
});
