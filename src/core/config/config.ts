import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { cannotStart } from '../system/errors.js';
import type { LinkAuth } from './link-auth.js';
import type { ArchiveLimits } from './archive-limits.js';

/** /etc/mesh-host/host.json: written by genesis from the bundle, edited by operators. */
export interface HostConfig extends LinkAuth {
  node: string;
  /** The control plane's public key (an operator nkey, O…), pinned at genesis. */
  publicKey?: string;
  servers: string[];
  reconcileIntervalMs: number;
  verifyPauseMs: number;
  /** How long a command waits for the lock before it names the holder and gives up (exit 3). */
  lockTimeoutMs: number;
  /** How often the key is read again besides hearing its puts (default a minute): a notice can be missed. */
  rereadMs?: number;
  /** How often the heartbeat is published (the first after a random part of it). */
  heartbeatMs?: number;
  /** Bounds of archives: what one may unpack to, how many entries, how much verified archives kept may take. */
  archiveLimits?: Partial<ArchiveLimits>;
  /** How long a release on trial has to serve, connect, apply and have a report acknowledged (default 180 s). */
  trialTimeoutMs?: number;
  /** Forces the service manager instead of taking it from the inventory. */
  serviceManager?: 'systemd' | 'openrc';
  /** node_exporter's textfile collector: the metrics are written here (whole) after every apply. */
  metricsFile?: string;
  /** A loopback HOST:PORT where the metrics are served (GET /metrics); any other address is refused. */
  metricsListen?: string;
  /**
   * Bounds of the reports waiting for the mesh (defaults 1,000 reports, 64 MiB): past one, the oldest
   * are folded into one report that says what was folded. `keepFull`: whole reports kept on the host.
   */
  outbox?: { maxReports?: number; maxBytes?: number; keepFull?: number };
  /** The container engine's API socket (Docker's or podman's); by default the first of /run/docker.sock and /run/podman/podman.sock that answers. */
  containerSocket?: string;
  /** The prefix of the nftables tables the mesh composes (default `mesh`): their filters are the mesh's. */
  meshTablePrefix?: string;
}

export const DEFAULTS = { reconcileIntervalMs: 5 * 60_000, verifyPauseMs: 1500, lockTimeoutMs: 10_000 } as const;

/** The configuration, or defaults when there is none yet (before genesis the node id is the host name). */
export function loadConfig(path: string): { config: HostConfig; found: boolean } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      return { config: { node: defaultNodeId(), servers: [], ...DEFAULTS }, found: false };
    }
    throw cannotStart(`the configuration ${path} cannot be read: ${(err as NodeJS.ErrnoException).code}`);
  }
  let value: Partial<HostConfig>;
  try {
    value = JSON.parse(text) as Partial<HostConfig>;
  } catch (err) {
    throw cannotStart(`the configuration ${path} is not JSON: ${(err as Error).message}`);
  }
  const config: HostConfig = { node: defaultNodeId(), servers: [], ...DEFAULTS, ...value };
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(config.node)) throw cannotStart(`the configuration ${path}: node '${config.node}' is not a node id ([A-Za-z0-9_-]{1,64})`);
  for (const [key, value] of Object.entries(config.outbox ?? {})) {
    if (!['maxReports', 'maxBytes', 'keepFull'].includes(key)) throw cannotStart(`the configuration ${path}: /outbox/${key}: unknown field (maxReports, maxBytes, keepFull)`);
    if (!Number.isInteger(value) || (value as number) < 1) throw cannotStart(`the configuration ${path}: /outbox/${key}: a whole number, at least 1`);
  }
  return { config, found: true };
}

/** The host name, made into a node id. */
export function defaultNodeId(): string {
  return hostname().split('.')[0]!.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64) || 'node';
}

/** Writes the configuration atomically (genesis writes it from the bundle); other settings are kept. */
export async function writeConfig(path: string, config: Partial<HostConfig>): Promise<void> {
  const [{ mkdirSync }, { dirname }, { writeDurably }] = await Promise.all([import('node:fs'), import('node:path'), import('../system/durable.js')]);
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  writeDurably(path, Buffer.from(`${JSON.stringify(config, null, 2)}\n`), 0o600);
}

/** The configuration as written on disk, without defaults: what an edit would keep. */
export function readConfigFile(path: string): Partial<HostConfig> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Partial<HostConfig>;
  } catch {
    return {};
  }
}
