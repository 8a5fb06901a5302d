import { afterAll, beforeAll } from 'vitest';
import type { SystemdContainer } from './systemd-container.js';

export interface ContainerBlock {
  /** Starts the block's container (inside a test, when it binds in what the test made). */
  start(make: () => Promise<SystemdContainer>): Promise<SystemdContainer>;
  readonly container: SystemdContainer;
  /** Runs a command inside and gives its output, trimmed; a failure throws, naming the command. */
  inside(command: string, args: string[]): Promise<string>;
}

/**
 * A container for the describe block it is called in: started by the block's beforeAll when `make` is
 * given, else by a test (when it binds in what the test made); stopped after the block.
 */
export function useContainer(make?: () => Promise<SystemdContainer>): ContainerBlock {
  let container: SystemdContainer | undefined;
  if (make) {
    beforeAll(async () => {
      container = await make();
    }, 900_000);
  }
  afterAll(async () => {
    await container?.stop();
  });
  const started = () => {
    if (!container) throw new Error('the container is started by the block (its beforeAll, or a test calling start()) before it is used');
    return container;
  };
  return {
    async start(make) {
      container = await make();
      return container;
    },
    get container() {
      return started();
    },
    async inside(command, args) {
      const r = await started().exec(command, args, 60_000);
      if (r.code !== 0) throw new Error(`${command} ${args.join(' ')}: exit ${r.code}: ${r.stderr}${r.stdout}`);
      return r.stdout.trim();
    },
  };
}
