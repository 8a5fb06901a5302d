import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { engineAnswers } from '../../src/kinds/container/socket.js';
import type { RunResult } from '../../src/core/system/runner.js';
import { projectDir } from './cli.js';
import { containerUnavailable, startSystemdContainer, type SystemdContainer } from './systemd-container.js';

/**
 * A real container engine for the tests: podman's Docker-compatible API service, inside the systemd
 * container the suite boots (podman cannot run containers on this machine's own root), with its socket
 * in a scratch folder bound at the same path, so code running out here talks to it as to any engine.
 * Beside it, Debian's docker-registry on the container's loopback for pulls by digest, and busybox
 * images made offline from busybox-static (scripts/busybox-image.mjs).
 */
export interface Podman {
  container: SystemdContainer;
  /** A folder visible at the same path out here and inside the container. */
  scratch: string;
  /** The engine's API socket, reachable from out here. */
  socket: string;
  /** The registry as an image reference's host (`127.0.0.1:5000`), reachable by the engine. */
  registry: string;
  /** A local image made from busybox-static (`localhost/busybox:base`), command `/bin/sh`, PATH /bin. */
  baseImage: string;
  podman(args: string[], timeoutMs?: number): Promise<RunResult>;
  /** A new image of its own (its own id, a label says `variant`; a health check if given), pushed to the registry and gone from the engine: `REF@sha256:…`. */
  pushImage(variant: string, options?: { healthcheck?: ImageHealthcheck }): Promise<string>;
  /** A `podman save` archive of a new image of its own (not in the engine): its path and the name it carries. */
  saveImage(variant: string): Promise<{ path: string; name: string }>;
  stop(): Promise<void>;
}

const REGISTRY = '127.0.0.1:5000';

/** Why podman cannot be run by the tests here, or undefined when it can. */
export function podmanUnavailable(): string | undefined {
  const container = containerUnavailable();
  if (container) return container;
  for (const [command, pkg] of [['podman', 'podman'], ['docker-registry', 'docker-registry'], ['/bin/busybox', 'busybox-static']]) {
    try {
      execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    } catch {
      return `${command} is not installed (apt-get install ${pkg})`;
    }
  }
  return undefined;
}

/** An image's health check as its config holds it (what a Dockerfile's HEALTHCHECK makes): durations in nanoseconds. */
export interface ImageHealthcheck {
  Test: string[];
  Interval?: number;
  Timeout?: number;
  StartPeriod?: number;
  Retries?: number;
}

/** An image archive made offline by the script try.sh uses, its own by its label (`variant=NAME`), with a health check if given. */
function busyboxImage(scratch: string, tag: string, variant?: string, healthcheck?: ImageHealthcheck): string {
  const out = join(scratch, `${tag.replace(/[^A-Za-z0-9]+/g, '-')}.tar`);
  const extra = variant ? [`variant=${variant}`, ...(healthcheck ? [JSON.stringify(healthcheck)] : [])] : [];
  execFileSync(process.execPath, [join(projectDir, 'scripts/busybox-image.mjs'), out, tag, ...extra]);
  return out;
}

/**
 * The container's /etc starts empty: podman's configuration comes as a scratch folder. Cgroups are off
 * (the one way crun runs under this machine's hybrid cgroups), no session keyring is made for each container
 * (the kernel's quota of keys ran out after a few dozen: 'create keyring: Operation not permitted'), and the
 * local registry speaks plain HTTP.
 */
function containersEtc(scratch: string): string {
  const etc = join(scratch, 'etc-containers');
  mkdirSync(etc);
  writeFileSync(join(etc, 'policy.json'), JSON.stringify({ default: [{ type: 'insecureAcceptAnything' }] }));
  writeFileSync(join(etc, 'containers.conf'), '[containers]\ncgroups = "disabled"\nkeyring = false\n');
  writeFileSync(join(etc, 'registries.conf'), `unqualified-search-registries = []\n[[registry]]\nlocation = "${REGISTRY}"\ninsecure = true\n`);
  return etc;
}

/** Asks the socket for `/_ping` until it answers OK, bounded. */
async function answers(socket: string, timeoutMs: number): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await engineAnswers(socket)); await new Promise((resolve) => setTimeout(resolve, 100))) {
    if (Date.now() > deadline) throw new Error(`the podman API at ${socket} did not answer within ${timeoutMs} ms`);
  }
}

async function must(result: Promise<RunResult>, what: string): Promise<RunResult> {
  const r = await result;
  if (r.code !== 0) throw new Error(`${what} failed (${r.code}): ${r.stderr || r.stdout || r.failure?.message}`);
  return r;
}

export async function startPodman(): Promise<Podman> {
  const scratch = mkdtempSync('/tmp/mesh-podman-');
  const etc = containersEtc(scratch);
  const container = await startSystemdContainer({
    binds: [scratch, `${etc}:/etc/containers`],
    // CNI's bridge plugin runs iptables, found through /etc/alternatives.
    readOnlyBinds: ['/etc/alternatives'],
    privateNetwork: true,
    bootTimeoutMs: 120_000,
    initArgs: ['systemd.mask=systemd-networkd-wait-online.service'],
  });
  try {
    const socket = join(scratch, 'podman.sock');
    const podman = (args: string[], timeoutMs = 60_000) => container.exec('podman', args, timeoutMs);
    writeFileSync(join(scratch, 'registry.yml'), `version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: /var/lib/mesh-test-registry\nhttp:\n  addr: ${REGISTRY}\n`);
    // Transient units of the container's systemd: they end with it.
    await must(container.exec('systemd-run', ['--unit=mesh-test-podman-api', 'podman', 'system', 'service', '--time=0', `unix://${socket}`]), 'starting podman system service');
    await must(container.exec('systemd-run', ['--unit=mesh-test-registry', 'docker-registry', 'serve', join(scratch, 'registry.yml')]), 'starting docker-registry');
    const baseImage = 'localhost/busybox:base';
    await must(podman(['load', '-i', busyboxImage(scratch, baseImage)]), 'podman load');
    await answers(socket, 30_000);
    const variant = async (name: string, healthcheck?: ImageHealthcheck): Promise<string> => {
      const local = `localhost/busybox-${name}:latest`;
      await must(podman(['load', '-i', busyboxImage(scratch, local, name, healthcheck)]), 'podman load');
      return local;
    };
    return {
      container,
      scratch,
      socket,
      registry: REGISTRY,
      baseImage,
      podman,
      async pushImage(name, options = {}) {
        const local = await variant(name, options.healthcheck);
        const remote = `${REGISTRY}/busybox-${name}`;
        const digestFile = join(scratch, `digest-${name}`);
        await must(podman(['push', '--digestfile', digestFile, local, `${remote}:latest`]), 'podman push');
        await must(podman(['rmi', local]), 'podman rmi');
        return `${remote}@${readFileSync(digestFile, 'utf8').trim()}`;
      },
      async saveImage(name) {
        const local = await variant(name);
        const path = join(scratch, `${name}.tar`);
        await must(podman(['save', '--format', 'docker-archive', '-o', path, local]), 'podman save');
        await must(podman(['rmi', local]), 'podman rmi');
        return { path, name: local };
      },
      async stop() {
        // The containers go first: the container would otherwise wait for them at power-off.
        await podman(['rm', '-f', '-t', '0', '--all']).catch(() => undefined);
        await container.stop();
        rmSync(scratch, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await container.stop();
    rmSync(scratch, { recursive: true, force: true });
    throw err;
  }
}
