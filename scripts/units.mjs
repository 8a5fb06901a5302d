// Writes the service definitions for the default paths (from the built src/host/release/release-units.ts) into DIR.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openrcScript, systemdUnit } from '../dist/src/host/release/release-units.js';

export function writeUnits(dir) {
  writeFileSync(join(dir, 'mesh-host.service'), systemdUnit());
  writeFileSync(join(dir, 'mesh-host.openrc'), openrcScript(), { mode: 0o755 });
}
