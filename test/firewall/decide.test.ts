import { describe, expect, it } from 'vitest';
import { decide } from '../../src/machine/filters/decide.js';
import type { Look } from '../../src/machine/filters/found.js';
import type { FoundFirewallRecord } from '../../src/core/store/state.js';

const look = (state: Look['state'], enabled?: boolean): Look => ({ tool: 'firewalld', state, ...(enabled === undefined ? {} : { enabled }), reason: '', method: '' });
const rec = (status: FoundFirewallRecord['status']): FoundFirewallRecord => ({ status, since: '2026-01-01T00:00:00.000Z' });

/** The retirement's rules, case by case: the tool as looked at, what the store keeps, the mode, the apply. */
const CASES: Array<[string, Look, FoundFirewallRecord | undefined, 'converged' | 'adopted', boolean, ReturnType<typeof decide>]> = [
  ['active, first seen, converged', look('active', true), undefined, 'converged', true, { act: 'retire', because: 'found-active' }],
  ['stopped but enabled at boot', look('inactive', true), undefined, 'converged', true, { act: 'retire', because: 'found-active' }],
  ['inactive at the first look', look('inactive', false), undefined, 'converged', true, { act: 'record-inactive' }],
  ['inactive at the first look, adopted', look('inactive', false), undefined, 'adopted', true, { act: 'record-inactive' }],
  ['inactive at the first look, the apply failed', look('inactive', false), undefined, 'converged', false, { act: 'record-inactive' }],
  ['found inactive, still inactive', look('inactive', false), rec('found-inactive'), 'converged', true, { act: 'none' }],
  ['found inactive, enabled since', look('active', true), rec('found-inactive'), 'converged', true, { act: 'retire', because: 'active-since-found-inactive' }],
  ['retired, still off', look('inactive', false), rec('retired'), 'converged', true, { act: 'none' }],
  ['retired, enabled again', look('active', true), rec('retired'), 'converged', true, { act: 'retire', because: 'enabled-again' }],
  ['retiring (cut short), whatever it says now', look('inactive', false), rec('retiring'), 'converged', true, { act: 'retire', because: 'unfinished' }],
  ['retiring, the apply failed', look('active', false), rec('retiring'), 'converged', false, { act: 'leave', because: 'apply-failed' }],
  ['active, the apply failed', look('active', true), undefined, 'converged', false, { act: 'leave', because: 'apply-failed' }],
  ['active, adopted', look('active', true), undefined, 'adopted', true, { act: 'leave', because: 'adopted' }],
  ['retired, enabled again, adopted since', look('active', true), rec('retired'), 'adopted', true, { act: 'leave', because: 'adopted' }],
  ['unknown', look('unknown'), undefined, 'converged', true, { act: 'leave', because: 'unknown' }],
];

describe('what is done about a found firewall', () => {
  it.each(CASES)('%s', (_name, l, record, mode, converged, expected) => {
    expect(decide(l, record, mode, converged)).toEqual(expected);
  });
});
