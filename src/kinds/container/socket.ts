import { request } from 'node:http';

/** Where an engine's API is found when the configuration names none: Docker's, then podman's system service. */
export const ENGINE_SOCKETS = ['/run/docker.sock', '/run/podman/podman.sock'] as const;

/** Does an engine answer `/_ping` on this socket within the bound? */
export function engineAnswers(socketPath: string, timeoutMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/**
 * The engine's socket: the configuration's `containerSocket` as it is, or the first of the usual ones
 * that answers. Undefined with the reason when none does.
 */
export async function engineSocket(configured: string | undefined): Promise<{ socket: string } | { reason: string }> {
  if (configured) return { socket: configured };
  for (const socket of ENGINE_SOCKETS) if (await engineAnswers(socket)) return { socket };
  return { reason: `no container engine answers at ${ENGINE_SOCKETS.join(' or ')} (name another with containerSocket in the host configuration)` };
}
