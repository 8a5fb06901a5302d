import { describe, expect, it } from 'vitest';
import type { Resource } from '../../src/core/declaration/schema.js';
import { inApplyOrder, type HandlerTable } from '../../src/engine/converge/converge.js';
import { BASE_HANDLERS } from '../../src/kinds/kind-handlers.js';
import { systemAccounts } from '../../src/engine/converge/unix-accounts.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const file = (id: string): Resource => ({ type: 'file', id, path: `/srv/${id}`, content: '' });
const dir = (id: string): Resource => ({ type: 'directory', id, path: `/srv/${id}` });

describe('the order of the plan', () => {
  it('keeps the declaration itself, in its order, when every kind has the same rank', () => {
    const resources = [file('b'), dir('a'), file('c')];
    expect(inApplyOrder(resources, BASE_HANDLERS)).toBe(resources);
  });

  it("puts a kind of lower apply rank first, and keeps the declaration's order within a rank", () => {
    const handlers: HandlerTable = { ...BASE_HANDLERS, directory: { ...BASE_HANDLERS.directory!, applyRank: 0 } };
    const order = inApplyOrder([file('f1'), dir('d1'), file('f2'), dir('d2')], handlers).map((r) => r.id);
    expect(order).toEqual(['d1', 'd2', 'f1', 'f2']);
  });
});

describe("the machine's accounts", () => {
  it('resolve an account an apply taught them, and read the tables again when refreshed', () => {
    const etc = mkdtempSync(join(tmpdir(), 'mesh-accounts-'));
    writeFileSync(join(etc, 'passwd'), 'root:x:0:0::/root:/bin/sh\n');
    writeFileSync(join(etc, 'group'), 'root:x:0:\n');
    const accounts = systemAccounts(etc);
    expect(accounts.uid('alice')).toBeUndefined();
    expect(accounts.gid('staff')).toBeUndefined();
    const before = accounts.generation;
    accounts.learn('user', 'alice', 1001);
    expect(accounts.generation).toBeGreaterThan(before);
    expect(accounts.uid('alice')).toBe(1001);
    expect(accounts.userName(1001)).toBe('alice');
    // The tables were read once: a group made since is not seen until the next apply refreshes them.
    writeFileSync(join(etc, 'group'), 'root:x:0:\nstaff:x:50:\n');
    expect(accounts.gid('staff')).toBeUndefined();
    accounts.refresh();
    expect(accounts.gid('staff')).toBe(50);
    expect(accounts.uid('alice')).toBeUndefined();
  });
});
