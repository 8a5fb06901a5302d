import { createReadStream } from 'node:fs';
import type Dockerode from 'dockerode';

/**
 * The Docker Engine API version asked for: 1.40 (Docker 19.03 and later; podman's compatible service
 * answers it from 3.x on). Nothing newer is used.
 */
export const ENGINE_API_VERSION = 'v1.40';

/** A container as one listing says it (every container of the engine, running or not, in one call). */
export interface Listed {
  id: string;
  name: string;
  /** created, running, paused, restarting, exited, dead. */
  state: string;
  labels: Record<string, string>;
}

/** A container as its inspection says it: what the second look decides on. */
export interface Inspected extends Listed {
  running: boolean;
  exitCode: number;
  startedAt: string;
  restartCount: number;
  /** The health check's status (starting, healthy, unhealthy), when the image has one. */
  health?: string;
  /** What the last health check printed (its last line), when one has run and printed anything. */
  healthOutput?: string;
}

/** What the host creates: every field of the normalized spec, in the engine's terms. */
export interface CreateRequest {
  name: string;
  image: string;
  command?: string[];
  env: string[];
  labels: Record<string, string>;
  /** "8080/tcp" → bindings. */
  ports: Record<string, Array<{ HostIp: string; HostPort: string }>>;
  binds: string[];
  restart: string;
  stopTimeout: number;
}

/** One event of the engine's stream, as the watcher needs it. */
export interface EngineEvent {
  action: string;
  id: string;
  labels: Record<string, string>;
}

/** The engine, as the host uses it: small, typed, and faked in fast tests. */
export interface ContainerEngine {
  /** Every container (running or not) carrying all these labels (`key=value`), in one call. */
  list(labels: string[]): Promise<Listed[]>;
  /** By name or id; undefined when there is none. */
  inspect(nameOrId: string): Promise<Inspected | undefined>;
  hasImage(ref: string): Promise<boolean>;
  pull(ref: string): Promise<void>;
  /** Loads an image archive from a file; the names (or ids) the engine says it loaded. */
  load(file: string): Promise<string[]>;
  tag(image: string, repo: string, tag: string): Promise<void>;
  create(request: CreateRequest): Promise<string>;
  start(id: string): Promise<void>;
  stop(id: string, timeoutS: number): Promise<void>;
  restart(id: string, timeoutS: number): Promise<void>;
  remove(id: string): Promise<void>;
  rename(id: string, name: string): Promise<void>;
  /** Where the engine keeps its containers and images (its storage's root), when it says. */
  storageRoot(): Promise<string | undefined>;
  /** The last lines of its log (stdout and stderr as they came). */
  logs(id: string, lines: number): Promise<string>;
  /**
   * The engine's event stream for containers with these labels, every action (podman 4.3's API answers
   * an `event` filter with nothing at all: the reader picks the actions); ends when `signal` aborts.
   */
  events(labels: string[], signal: AbortSignal): AsyncIterable<EngineEvent>;
}

/** Waits for a progress stream (pull, load) to end; its error lines are errors. */
function finished(modem: Dockerode['modem'], stream: NodeJS.ReadableStream): Promise<Array<Record<string, unknown>>> {
  return new Promise((resolve, reject) => modem.followProgress(stream, (err: Error | null, out: Array<Record<string, unknown>>) => (err ? reject(err) : resolve(out))));
}

/** The HTTP status the engine answered a failed request with; undefined when it did not answer (no socket, a broken connection). */
export function engineStatus(err: unknown): number | undefined {
  const status = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' ? status : undefined;
}

const notFound = (err: unknown) => engineStatus(err) === 404;

/** A log without a TTY comes in frames: 8 bytes (stream, 3 zero, big-endian length) and the bytes. */
export function demuxLog(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= buffer.length && buffer[at]! <= 2 && buffer[at + 1] === 0) {
    const length = buffer.readUInt32BE(at + 4);
    parts.push(buffer.subarray(at + 8, at + 8 + length));
    at += 8 + length;
  }
  return at === 0 ? buffer.toString('utf8') : Buffer.concat(parts).toString('utf8');
}

function inspected(info: Dockerode.ContainerInspectInfo): Inspected {
  const checks = (info.State as { Health?: { Status?: string; Log?: Array<{ Output?: string }> | null } }).Health;
  const health = checks?.Status;
  const healthOutput = checks?.Log?.at(-1)?.Output?.trim().split('\n').at(-1);
  return {
    id: info.Id,
    name: info.Name.replace(/^\//, ''),
    state: info.State.Status,
    labels: info.Config.Labels ?? {},
    running: info.State.Running,
    exitCode: info.State.ExitCode,
    startedAt: info.State.StartedAt,
    restartCount: info.RestartCount,
    ...(health ? { health } : {}),
    ...(healthOutput ? { healthOutput } : {}),
  };
}

/** The engine behind a socket, through dockerode (loaded only by an apply that has containers). */
export async function dockerEngine(socketPath: string): Promise<ContainerEngine> {
  const loaded: { default?: typeof Dockerode } = await import('dockerode');
  const Docker = loaded.default ?? (loaded as typeof Dockerode);
  const docker = new Docker({ socketPath, version: ENGINE_API_VERSION });
  return {
    async list(labels) {
      const found = await docker.listContainers({ all: true, filters: { label: labels } });
      return found.map((c) => ({ id: c.Id, name: (c.Names[0] ?? '').replace(/^\//, ''), state: c.State, labels: c.Labels ?? {} }));
    },
    async inspect(nameOrId) {
      try {
        return inspected(await docker.getContainer(nameOrId).inspect());
      } catch (err) {
        if (notFound(err)) return undefined;
        throw err;
      }
    },
    async hasImage(ref) {
      try {
        await docker.getImage(ref).inspect();
        return true;
      } catch (err) {
        if (notFound(err)) return false;
        throw err;
      }
    },
    async pull(ref) {
      await finished(docker.modem, await docker.pull(ref));
    },
    async load(file) {
      const out = await finished(docker.modem, await docker.loadImage(createReadStream(file)));
      return out.flatMap((line) => {
        const said = typeof line.stream === 'string' ? line.stream : '';
        const named = /Loaded image(?: ID)?: (\S+)/.exec(said);
        return named ? [named[1]!] : [];
      });
    },
    async tag(image, repo, tag) {
      await docker.getImage(image).tag({ repo, tag });
    },
    async create(r) {
      return (await docker.createContainer(createOptions(r))).id;
    },
    async start(id) {
      await docker.getContainer(id).start();
    },
    async stop(id, timeoutS) {
      try {
        await docker.getContainer(id).stop({ t: timeoutS });
      } catch (err) {
        // 304: already stopped.
        if (engineStatus(err) !== 304) throw err;
      }
    },
    async restart(id, timeoutS) {
      await docker.getContainer(id).restart({ t: timeoutS });
    },
    async remove(id) {
      try {
        await docker.getContainer(id).remove({ force: true });
      } catch (err) {
        if (!notFound(err)) throw err;
      }
    },
    async rename(id, name) {
      await docker.getContainer(id).rename({ name });
    },
    async storageRoot() {
      const root = ((await docker.info()) as { DockerRootDir?: unknown }).DockerRootDir;
      return typeof root === 'string' && root !== '' ? root : undefined;
    },
    async logs(id, lines) {
      return demuxLog(await docker.getContainer(id).logs({ stdout: true, stderr: true, tail: lines, follow: false }));
    },
    events: (labels, signal) => engineEvents(docker, labels, signal),
  };
}

/** A create request in the engine API's words. */
function createOptions(r: CreateRequest): Dockerode.ContainerCreateOptions {
  return {
    name: r.name,
    Image: r.image,
    ...(r.command ? { Cmd: r.command } : {}),
    Env: r.env,
    Labels: r.labels,
    StopTimeout: r.stopTimeout,
    ExposedPorts: Object.fromEntries(Object.keys(r.ports).map((p) => [p, {}])),
    HostConfig: { PortBindings: r.ports, Binds: r.binds, RestartPolicy: { Name: r.restart } },
  };
}

async function* engineEvents(docker: Dockerode, labels: string[], signal: AbortSignal): AsyncIterable<EngineEvent> {
  const stream = (await docker.getEvents({ filters: { type: ['container'], label: labels }, abortSignal: signal } as Dockerode.GetEventsOptions)) as NodeJS.ReadableStream & { destroy(): void };
  signal.addEventListener('abort', () => stream.destroy(), { once: true });
  let rest = '';
  try {
    for await (const chunk of stream) {
      rest += chunk.toString();
      const lines = rest.split('\n');
      rest = lines.pop()!;
      for (const line of lines) {
        if (!line.trim()) continue;
        const e = JSON.parse(line) as { Action?: string; status?: string; Actor?: { ID?: string; Attributes?: Record<string, string> }; id?: string };
        yield { action: e.Action ?? e.status ?? '', id: e.Actor?.ID ?? e.id ?? '', labels: e.Actor?.Attributes ?? {} };
      }
    }
  } catch (err) {
    if (!signal.aborted) throw err;
  }
}
