import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectDir } from '../support/cli.js';
import { hostGrants, hostPermissions } from '../../src/link/permissions.js';

/** The rows of the table under "What a host may do" in docs/wire.md: direction and subject, with the reason given. */
function documentedGrants(): { direction: string; subject: string; why: string }[] {
  const text = readFileSync(join(projectDir, 'docs/wire.md'), 'utf8');
  const section = text.split('\n## What a host may do\n')[1]?.split('\n## ')[0];
  if (!section) throw new Error('docs/wire.md has no section "What a host may do"');
  return section.split('\n').flatMap((line) => {
    const m = /^\| (publish|subscribe) \| `([^`]+)` \| (.*) \|$/.exec(line);
    return m ? [{ direction: m[1]!, subject: m[2]!, why: m[3]! }] : [];
  });
}

describe("a host's permissions", () => {
  it('docs/wire.md lists exactly the subjects the code grants, each with why', () => {
    const documented = documentedGrants();
    const granted = hostGrants('<node>');
    expect(documented.map(({ direction, subject }) => `${direction} ${subject}`).sort()).toEqual(granted.map(({ direction, subject }) => `${direction} ${subject}`).sort());
    for (const row of documented) expect(row.why.trim().length, row.subject).toBeGreaterThan(10);
  });

  it("name only the node's own key and subjects, and no wildcard reaches another node's", () => {
    const permissions = hostPermissions('alpha');
    const all = [...permissions.pub.allow, ...permissions.sub.allow];
    for (const subject of all) {
      // Every subject of the bucket, the reports, the requests or the inbox names this node as a token of its own.
      // The trust root's notices are the fleet's, the same for every host (as the trust bucket's puts are): no node's own.
      if (subject === 'mesh.trusted.*') continue;
      if (/mesh_declarations|^mesh\.|^_INBOX/.test(subject)) expect(subject.split('.'), subject).toContain('alpha');
      if (subject.endsWith('>')) expect(subject).toBe('_INBOX.node.alpha.>');
    }
    expect(permissions.sub.allow).toContain('_INBOX.node.alpha.>');
    expect(permissions.resp).toEqual({ max: 1, ttl: 120_000_000_000 });
  });
});
