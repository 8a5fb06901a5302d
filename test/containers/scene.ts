import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import type { ApplyRequest } from '../../src/engine/apply/apply.js';
import type { ArchiveObjectsProvider } from '../../src/kinds/archive/objects.js';
import { DEFAULT_ARCHIVE_LIMITS } from '../../src/core/config/archive-limits.js';
import { dockerEngine, type ContainerEngine } from '../../src/kinds/container/engine.js';
import { containerHandler } from '../../src/kinds/container/container-handler.js';
import type { ContainerResource, Mode, Resource } from '../../src/core/declaration/schema.js';
import { BASE_HANDLERS } from '../../src/kinds/kind-handlers.js';
import { systemClock } from '../../src/core/system/clock.js';
import { declaration, reportOf, testHost, type TestHost } from '../support/host.js';
import { podmanUnavailable, startPodman, type Podman } from '../support/podman.js';

/** Why the container tests cannot run here (they run anyway in CI, and fail there). */
export const unavailable = podmanUnavailable();
export const skip = unavailable !== undefined && !process.env.CI;

export interface Scene {
  podman: Podman;
  host: TestHost;
  /** The real engine as the handler sees it, counting the listings it is asked for. */
  engine: ContainerEngine & { listings: number };
  /** Image objects of the mesh, when a test gives some. */
  objects?: ArchiveObjectsProvider;
  /** Applies the resources as the next declaration (its sequence one higher). */
  apply(resources: Resource[], options?: { mode?: Mode; request?: Partial<ApplyRequest> }): ReturnType<TestHost['apply']>;
  /** The same, and the report of an applied one. */
  report(resources: Resource[], options?: { mode?: Mode; request?: Partial<ApplyRequest> }): Promise<ReturnType<typeof reportOf>>;
  /** `podman inspect --format` of a container, inside the engine's machine. */
  inspect(name: string, format: string): Promise<string>;
  /** This test's applies pause this long before the second look (PAUSE_MS unless set). */
  setPause(ms: number): void;
  /** Told each sync of the engine's storage the handler asks (the engine's storage is in its own machine here, where no sync of this one reaches). */
  onSync?: (path: string) => void;
}

export const PAUSE_MS = 1000;

/**
 * A real podman engine for a file's tests (booted once), and a fresh host over it for each test, with
 * the container handler talking to the engine's socket; every container is removed after each test.
 */
export function useContainerScene(): Scene {
  const scene = {} as Scene;
  let sequence = 0;
  beforeAll(async () => {
    scene.podman = await startPodman();
    const real = await dockerEngine(scene.podman.socket);
    scene.engine = Object.assign(Object.create(real) as ContainerEngine, {
      listings: 0,
      list: (labels: string[]) => {
        scene.engine.listings += 1;
        return real.list(labels);
      },
    });
  });
  afterAll(async () => scene.podman?.stop());
  const handlers = (host: TestHost, pauseMs: number) => ({
    ...BASE_HANDLERS,
    container: containerHandler({
      node: 'test-node',
      stateDir: host.stateDir,
      engine: async () => scene.engine,
      clock: systemClock,
      pauseMs,
      archiveLimits: DEFAULT_ARCHIVE_LIMITS,
      objects: () => scene.objects,
      syncFileSystem: async (path: string) => scene.onSync?.(path),
    }),
  });
  beforeEach(() => {
    const host = testHost();
    host.env.handlers = handlers(host, PAUSE_MS);
    scene.host = host;
    scene.engine.listings = 0;
    delete scene.objects;
    delete scene.onSync;
  });
  afterEach(async () => {
    scene.host?.cleanup();
    await scene.podman?.podman(['rm', '-f', '-t', '0', '--all']);
  });
  scene.apply = (resources, options = {}) => scene.host.apply(declaration(resources, { sequence: ++sequence, mode: options.mode ?? 'converged' }), options.request);
  scene.report = async (resources, options) => reportOf(await scene.apply(resources, options));
  scene.inspect = async (name, format) => (await scene.podman.podman(['inspect', '--format', format, name])).stdout.trim();
  scene.setPause = (ms) => (scene.host.env.handlers = handlers(scene.host, ms));
  return scene;
}

/** A busybox container: an HTTP server by default, which runs until stopped (busybox as PID 1 ignores SIGTERM: its stop is a kill after a second). */
export function container(image: ContainerResource['image'], extra: Partial<ContainerResource> = {}): ContainerResource {
  return { type: 'container', id: 'web', name: 'web', image, command: ['httpd', '-f', '-p', '8080'], state: 'running', stopTimeout: 1, ...extra };
}
