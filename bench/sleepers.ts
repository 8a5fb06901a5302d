import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSystemdContainer, type SystemdContainer } from '../test/support/systemd-container.js';

export interface Sleepers {
  container: SystemdContainer;
  /** `NAME0.service`, `NAME1.service`…: services that only sleep. */
  units: string[];
  /** A scratch folder of this machine. */
  dir: string;
}

/**
 * A real systemd in a container with `count` services that only sleep, installed as a package would
 * (and started when asked), and a scratch folder: given to `body`, both ended after it whatever happens.
 */
export async function withSleepers<T>(name: string, count: number, options: { start: boolean }, body: (s: Sleepers) => Promise<T>): Promise<T> {
  const container = await startSystemdContainer();
  const dir = mkdtempSync(join(tmpdir(), `mesh-host-bench-${name}-`));
  try {
    const units = Array.from({ length: count }, (_, i) => `${name}${i}.service`);
    const install = units.map((u) => `printf '[Service]\\nExecStart=/bin/sleep 100000\\n' > /etc/systemd/system/${u}`).join('; ');
    const done = await container.exec('sh', ['-c', `${install}; systemctl daemon-reload${options.start ? ` && systemctl start ${units.join(' ')}` : ''}`], 60_000);
    if (done.code !== 0) throw new Error(`the ${name} units were not ${options.start ? 'started' : 'installed'}: ${done.stderr}`);
    return await body({ container, units, dir });
  } finally {
    await container.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
