import { setFlagsFromString } from 'node:v8';

/**
 * Keeps the daemon's young generation at its first size. V8 doubles the young generation's semi-spaces
 * as a busy process allocates (up to 16 MB each on this machine's Node 20), and they stay grown: after
 * 1,000 applies the daemon held 100 MB instead of about 55. `--max-semi-space-size` would bound it, but
 * a single executable takes no V8 flags on its command line, and NODE_OPTIONS voids its code cache; the
 * growth factor can be set from inside the process, before the daemon allocates, and is honoured from
 * then on. The cost is more frequent, shorter scavenges.
 */
export function keepYoungGenerationSmall(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}
