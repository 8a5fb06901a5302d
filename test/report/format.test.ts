import { describe, expect, it } from 'vitest';
import { formatPlan } from '../../src/report/report.js';
import type { Change } from '../../src/resources/changes.js';
import { readable } from '../../src/report/words.js';

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
