import type { ContainerEngine } from './engine.js';

/** The engine behind the configured socket, or the first usual one that answers; connected once, on first need. */
export function engineOnce(configured: string | undefined): () => Promise<ContainerEngine> {
  let engine: Promise<ContainerEngine> | undefined;
  return () =>
    (engine ??= (async () => {
      const [{ engineSocket }, { dockerEngine }] = await Promise.all([import('./socket.js'), import('./engine.js')]);
      const found = await engineSocket(configured);
      if ('reason' in found) throw new Error(found.reason);
      return dockerEngine(found.socket);
    })().catch((err: unknown) => {
      // Asked again at the next apply: an engine started since is found then.
      engine = undefined;
      throw err;
    }));
}
