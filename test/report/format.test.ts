import { describe, expect, it } from 'vitest';
import { formatPlan } from '../../src/report/report.js';
import type { Step } from '../../src/resources/types.js';

const file = (n: number, actions: string[] = []): Step => ({ resource: `f${n}`, type: 'file', target: `/srv/f${n}.conf`, actions });

describe('the readable plan', () => {
  it('lists the steps to take under a count against the whole plan, and leaves out what is already as declared', () => {
    const steps = [file(1), file(2, ['create']), file(3), file(4, ['content (+1 −1 lines)', 'mode 0644→0640'])];
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
