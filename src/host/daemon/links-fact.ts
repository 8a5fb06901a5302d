import { probeLinks, type Link } from '../../machine/inventory/net-links.js';
import type { Clock } from '../../core/system/clock.js';
import type { CommandRunner } from '../../core/system/runner.js';

/** The links are probed at most this often. */
const LINKS_TTL_MS = 30_000;

/**
 * The links a report carries, probed at most every 30 s: three `ip` processes would cost an apply more
 * than the apply itself, and links change on the scale of minutes (the reconcile's fingerprint reads them).
 */
export function cachedLinks(runner: CommandRunner, clock: Clock): () => Promise<Link[]> {
  let links: { at: number; value: Promise<Link[]> } | undefined;
  return () => {
    if (!links || clock.monotonic() - links.at > LINKS_TTL_MS) {
      links = { at: clock.monotonic(), value: probeLinks(runner, 2000).then((f) => f.links) };
    }
    return links.value;
  };
}
