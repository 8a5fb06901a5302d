import type { Logger } from '../../core/system/log.js';
import type { Finding, Watcher } from '../../engine/converge/watch-finding.js';

/** One event of the engine's stream, as the watcher reads it. */
export interface ContainerEvent {
  action: string;
  id: string;
  /** The engine's attributes: the container's labels, its name, an exit code. */
  labels: Record<string, string>;
}

/** The engine's event stream for the host's containers (by label), ending when the signal aborts. */
export type ContainerEvents = (labels: string[], signal: AbortSignal) => AsyncIterable<ContainerEvent>;

/** What the engine says when a container stops being what the host made: it died, ran out of memory, or was removed (Docker's destroy, podman's remove). */
export const WATCHED_ACTIONS = ['die', 'oom', 'destroy', 'remove'];

export interface ContainerWatchOptions {
  /** The engine's events, asked for once the watcher starts (and again when the stream breaks). */
  events: () => Promise<ContainerEvents>;
  /** The label every container of this host carries (`mesh-host.node=NODE`). */
  label: string;
  onFound(found: Finding[]): void;
  log: Logger;
  /** Before the stream is asked for again after it broke (default 2 s). */
  retryMs?: number;
}

/** One line of what happened: `container web died (exit code 137)`. */
export function containerFinding(event: ContainerEvent): Finding {
  const name = event.labels.name ?? event.id.slice(0, 12);
  const code = event.labels.exitCode ?? event.labels.containerExitCode;
  const what = event.action === 'die' ? `died${code !== undefined ? ` (exit code ${code})` : ''}` : event.action === 'oom' ? 'ran out of memory' : 'was removed';
  return { kind: 'container', target: name, message: `container ${name} ${what}` };
}

/**
 * Reads the engine's event stream for the host's containers between applies: a container that dies,
 * runs out of memory or is removed is said, and a reconcile is asked for; nothing else is done here.
 * Closed when the next apply starts, so the apply's own stops and replacements are never heard.
 */
export function watchContainers(options: ContainerWatchOptions): Watcher {
  const abort = new AbortController();
  const run = async () => {
    while (!abort.signal.aborted) {
      try {
        const events = await options.events();
        for await (const event of events([options.label], abort.signal)) {
          if (WATCHED_ACTIONS.includes(event.action)) options.onFound([containerFinding(event)]);
        }
      } catch (err) {
        if (abort.signal.aborted) return;
        options.log.warn({ err: (err as Error).message }, 'watch: the container engine\'s events could not be read; trying again');
      }
      if (!abort.signal.aborted) await new Promise((resolve) => setTimeout(resolve, options.retryMs ?? 2000));
    }
  };
  void run();
  return { close: () => abort.abort() };
}
