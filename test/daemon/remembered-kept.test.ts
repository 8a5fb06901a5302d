import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { newOperatorKey, sign } from '../../src/core/declaration/envelope.js';
import { receiveDeclaration } from '../../src/core/declaration/load.js';
import { RememberedKept } from '../../src/host/daemon/remembered-kept.js';
import { scratchFolders } from '../support/tree.js';

const folder = scratchFolders(afterEach);

async function signed(seed: string, sequence: number): Promise<Buffer> {
  const payload = Buffer.from(JSON.stringify({ version: 1, node: 'n1', mode: 'converged', sequence, resources: [{ type: 'directory', id: 'a', path: '/srv/a' }] }));
  return Buffer.from(JSON.stringify(await sign(payload, seed)));
}

describe('the kept declaration as the daemon opens it', () => {
  it('the same bytes under the same key and node are not checked again; other bytes, a changed file or another key are', async () => {
    const { seed, publicKey } = await newOperatorKey();
    const config = { publicKey, node: 'n1' };
    const kept = new RememberedKept(folder());
    const bytes = await signed(seed, 2);
    const received = await receiveDeclaration(bytes, { source: 'the delivery', node: 'n1', requireSignature: true, pinnedKey: publicKey });
    // The delivery carries what the intake checked; the lifecycle keeps it: those very bytes are written.
    expect(kept.exists()).toBe(false);
    kept.keepDelivered({ sequence: 2, digest: received.digest, revision: 7, checked: received }, config);
    // Written off the event loop: until it is on disk, the kept declaration is those bytes all the same.
    expect(kept.exists()).toBe(true);
    expect(await kept.receive(config)).toBe(received);
    await kept.durable();
    expect(kept.read().equals(bytes)).toBe(true);
    expect(kept.revision()).toEqual({ revision: 7, digest: received.digest });
    // The very object the intake made: nothing parsed again.
    expect(await kept.receive(config)).toBe(received);
    // Only a delivery that carries the declaration the intake checked (and no other) can be kept.
    expect(() => kept.keepDelivered({ sequence: 3, digest: 'sha256:other', revision: 8 }, config)).toThrow(/does not carry the declaration the intake checked/);
    expect(() => kept.keepDelivered({ sequence: 3, digest: 'sha256:other', revision: 8, checked: received }, config)).toThrow(/does not carry the declaration the intake checked/);

    // A file changed on disk is checked whole: a forged one is refused as before.
    const forged = JSON.parse(bytes.toString()) as { payload: string };
    forged.payload = Buffer.from(JSON.stringify({ version: 1, node: 'n1', mode: 'converged', sequence: 2, resources: [] })).toString('base64');
    writeFileSync(kept.path, JSON.stringify(forged));
    await expect(kept.receive(config)).rejects.toMatchObject({ kind: 'forged' });

    // Another declaration kept: opened, then remembered.
    const next = await signed(seed, 3);
    writeFileSync(kept.path, next);
    const opened = await kept.receive(config);
    expect(opened.declaration.sequence).toBe(3);
    expect(await kept.receive(config)).toBe(opened);

    // Another pinned key: checked again (and refused: the bytes are not signed by it).
    const other = await newOperatorKey();
    await expect(kept.receive({ publicKey: other.publicKey, node: 'n1' })).rejects.toMatchObject({ kind: 'forged' });
  });

  it('a keep that could not be written is written again when an apply next asks, and is the kept declaration meanwhile', async () => {
    const { seed, publicKey } = await newOperatorKey();
    const config = { publicKey, node: 'n1' };
    const dir = folder();
    const kept = new RememberedKept(dir);
    const bytes = await signed(seed, 2);
    const received = await receiveDeclaration(bytes, { source: 'the delivery', node: 'n1', requireSignature: true, pinnedKey: publicKey });
    // A directory where the kept declaration goes: the write's rename fails, as a failing disk would make it.
    mkdirSync(join(dir, 'declared.json', 'in-the-way'), { recursive: true });
    kept.keepDelivered({ sequence: 2, digest: received.digest, revision: 7, checked: received }, config);
    await expect(kept.durable()).rejects.toMatchObject({ code: expect.stringMatching(/^(EISDIR|ENOTEMPTY|EEXIST)$/) });
    expect(kept.exists()).toBe(true);
    expect(await kept.receive(config)).toBe(received);
    // Asked again once the way is clear: written now.
    rmSync(join(dir, 'declared.json'), { recursive: true });
    await kept.durable();
    expect(kept.read().equals(bytes)).toBe(true);
    expect(kept.revision()).toEqual({ revision: 7, digest: received.digest });
  });
});
