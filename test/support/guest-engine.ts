import { request } from 'node:http';
import { peekState } from '../../src/core/store/store.js';
import { engineAnswers } from '../../src/kinds/container/socket.js';
import { LABEL } from '../../src/kinds/container/engine-request.js';

/**
 * The guest's side of a container's power cut (run by guest-check.ts inside the guest): the engine's
 * API waited for, and what the engine holds read straight off its socket (plain HTTP, not the host's
 * engine code: the check does not trust what it checks).
 */

/** Seconds until the engine answers `/_ping` on `socket`, or `no` after `seconds`. */
export async function engineUp(socket: string, seconds: number): Promise<string> {
  const started = performance.now();
  while (!(await engineAnswers(socket, 1000))) {
    if (performance.now() - started > seconds * 1000) return 'no';
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return ((performance.now() - started) / 1000).toFixed(1);
}

interface EngineContainer {
  Id: string;
  Names: string[];
  State: string;
  Labels: Record<string, string> | null;
}

function listAll(socket: string): Promise<EngineContainer[]> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath: socket, path: '/containers/json?all=true', timeout: 60_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body) as EngineContainer[]) : reject(new Error(`the engine answered ${res.statusCode}: ${body.slice(0, 300)}`))));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('the engine did not answer its listing')));
    req.end();
  });
}

/** One container as the check says it: its name, its short id, its state, whether the host made it. */
export interface SeenContainer {
  name: string;
  id: string;
  state: string;
  /** The resource the host's label names, when the host made it, and the spec its label says. */
  resource?: string;
  spec?: string;
}

/** What the store records of a container resource: the container's id and spec. */
export interface RecordedContainer {
  id: string;
  spec: string;
}

/** Every container the engine has (stopped ones too), and the container ids the store records, by resource. */
export async function engineContainers(socket: string, stateDir: string): Promise<{ engine: SeenContainer[]; recorded: Record<string, RecordedContainer> }> {
  const engine = (await listAll(socket)).map((c) => ({
    name: (c.Names[0] ?? '').replace(/^\//, ''),
    id: c.Id,
    state: c.State,
    ...(c.Labels?.[LABEL.resource] ? { resource: c.Labels[LABEL.resource], spec: c.Labels[LABEL.spec] ?? '' } : {}),
  }));
  const recorded: Record<string, RecordedContainer> = {};
  for (const r of Object.values(peekState(stateDir)?.records ?? {})) if (r.type === 'container') recorded[r.id] = { id: r.container?.id ?? '', spec: r.container?.spec ?? '' };
  return { engine, recorded };
}
