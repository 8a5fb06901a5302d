import { describe, expect, it } from 'vitest';
import { fingerprintOf, shouldSpeak } from '../../src/engine/report/speak.js';
import type { Facts } from '../../src/engine/report/report.js';

const facts = (over: Partial<Facts> = {}): Facts => ({ held: [], links: [], filters: [], foundFirewall: null, ...over });
const eth0 = { name: 'eth0', state: 'UP', addresses: [], facesOutside: true, why: ['default route via 10.0.0.1'] };
const quiet = (f: Facts = facts()) => ({ trigger: 'reconcile' as const, outcome: 'converged' as const, steps: [{ resource: 'a', type: 'file' as const, target: '/a', actions: [], status: 'unchanged' as const }], facts: f });

describe('the speak predicate', () => {
  it('a reconcile that changed nothing, with the fingerprint last reported, says nothing', () => {
    expect(shouldSpeak(quiet(), fingerprintOf(facts()))).toBe(false);
  });

  it('a reconcile speaks when it changed something, failed, or the fingerprint moved', () => {
    const last = fingerprintOf(facts());
    expect(shouldSpeak({ ...quiet(), steps: [{ ...quiet().steps[0]!, status: 'done' }] }, last)).toBe(true);
    expect(shouldSpeak({ ...quiet(), outcome: 'failed' }, last)).toBe(true);
    expect(shouldSpeak(quiet(facts({ held: [{ id: 'x', target: '/etc/x', reason: 'found' }] })), last)).toBe(true);
    expect(shouldSpeak(quiet(facts({ foundFirewall: { tools: [{ tool: 'ufw', state: 'active', enabled: true, reason: "ufw says 'Status: active'", method: 'ufw status' }] } })), last)).toBe(true);
    expect(shouldSpeak(quiet(facts({ filters: [{ kind: 'filter', backend: 'nft', family: 'inet', table: 'filter', chain: 'input', hook: 'input', policy: 'drop', refusing: 0, owner: 'other', by: 'other' }] })), last)).toBe(true);
    expect(shouldSpeak(quiet(), undefined)).toBe(true);
  });

  it('a converged machine that holds nothing speaks when its links facing outside change (the circular wait)', () => {
    const before = fingerprintOf(facts());
    expect(shouldSpeak(quiet(facts({ links: [eth0] })), before)).toBe(true);
    // A link that does not face outside, or an address change on one that does, is nothing to say.
    const now = fingerprintOf(facts({ links: [eth0] }));
    expect(shouldSpeak(quiet(facts({ links: [eth0, { ...eth0, name: 'lo', facesOutside: false, why: [] }] })), now)).toBe(false);
  });

  it('every other trigger reports', () => {
    for (const trigger of ['apply', 'genesis', 'delivery'] as const) expect(shouldSpeak({ ...quiet(), trigger }, fingerprintOf(facts()))).toBe(true);
  });
});
