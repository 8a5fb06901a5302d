import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { fmt, median, wallProcess } from './stats.js';

const project = fileURLToPath(new URL('../../', import.meta.url));

/** `mesh-host --version` and `mesh-host inventory` against `node -e 0`, interleaved. */
export async function benchStartup(runs = 15): Promise<string[]> {
  const bare: number[] = [];
  const version: number[] = [];
  const inventory: number[] = [];
  for (let i = 0; i < runs; i++) {
    bare.push(wallProcess(process.execPath, ['-e', '0']).ms);
    version.push(wallProcess(process.execPath, [join(project, 'bin/mesh-host'), '--version']).ms);
    inventory.push(wallProcess(process.execPath, [join(project, 'bin/mesh-host'), 'inventory', '--json', '--state-dir', '/nonexistent-mesh-host-bench']).ms);
  }
  const b = median(bare);
  return [
    '## Start-up',
    '',
    `Median of ${runs} interleaved runs.`,
    '',
    '| command | wall | ratio to `node -e 0` |',
    '| --- | ---: | ---: |',
    `| \`node -e 0\` | ${fmt(b)} ms | 1.00× |`,
    `| \`mesh-host --version\` | ${fmt(median(version))} ms | ${(median(version) / b).toFixed(2)}× |`,
    `| \`mesh-host inventory --json\` (every probe, in parallel) | ${fmt(median(inventory))} ms | ${(median(inventory) / b).toFixed(2)}× |`,
  ];
}
