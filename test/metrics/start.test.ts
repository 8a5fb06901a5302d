import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';
import { releaseBuild } from '../support/releases.js';

const unavailable = natsUnavailable();

/**
 * The textfile is written once as the daemon starts, before it connects: node_exporter then has the
 * host's metrics from its first scrape, not only after the first apply. Run as shipped, since the
 * bundle (and the single executable made from it) orders its code otherwise than the sources do.
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`the metrics textfile at the daemon's start${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();
  const programs: [string, () => string | undefined][] = [
    ['the bundled program (bin/mesh-host)', () => undefined],
    ['the single executable', () => releaseBuild('0.1.0')],
  ];

  for (const [name, program] of programs) {
    it(`is written by ${name} before it connects, with no failed write logged`, async () => {
      const h = await mesh.enrol({ start: false, program: program() });
      const file = join(h.dir, 'textfile', 'mesh-host.prom');
      writeFileSync(h.config, JSON.stringify({ ...JSON.parse(readFileSync(h.config, 'utf8')), metricsFile: file }));
      await h.start();
      // start() returns once the daemon logged 'link: connected', which comes after the first write.
      expect(h.log()).not.toContain('the textfile could not be written');
      expect(existsSync(file)).toBe(true);
      const text = readFileSync(file, 'utf8');
      expect(text).toMatch(/^mesh_host_outbox_reports\{node="[^"]+"\} \d+$/m);
      // Genesis made report 1 before the daemon ran: the start's write already says so.
      expect(text).toMatch(/^mesh_host_last_report_sequence\{node="[^"]+"\} 1$/m);
    }, 600_000);
  }
});
