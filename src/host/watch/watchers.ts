import type { ResourceRecord } from '../../core/store/state.js';
import type { Watcher } from '../../engine/converge/watch-finding.js';
import { KIND_CODE } from '../../kinds/kind-handlers.js';
import type { KindWatch, KindWatchInput } from '../../kinds/kind-parts.js';
import { watchFootprint, type Owned } from './footprint.js';

export interface HostWatchInput extends KindWatchInput {
  /** Where the declared paths are (`--root`). */
  root: string;
  /** The footprint's first look waits this long (see FootprintWatchOptions). */
  firstLookAfterMs?: number;
}

const watchOf = (type: string): KindWatch | undefined => (KIND_CODE as Record<string, { watch?: KindWatch }>)[type]?.watch;

/** The paths the host owns of every kind the footprint watches, each as that kind says (a file or a directory). */
export function ownedPaths(records: Readonly<Record<string, ResourceRecord>>): Owned[] {
  const owned: Owned[] = [];
  for (const id in records) {
    const r = records[id]!;
    const watch = watchOf(r.type);
    if (watch && 'footprint' in watch) owned.push({ target: r.target, type: watch.footprint });
  }
  return owned;
}

export interface HostWatcher extends Watcher {
  /** Settles once the footprint's first look is taken (at once when the host owns no path). */
  readonly looked: Promise<void>;
}

/** Every watcher of a host between two applies, as the registry of kinds says, closed together when the next apply starts. */
export function watchHost(input: HostWatchInput): HostWatcher {
  const owned = ownedPaths(input.records);
  const watchers: Watcher[] = [];
  const footprint = owned.length > 0 ? watchFootprint({ owned, root: input.root, onFound: input.onFound, log: input.log, ...(input.firstLookAfterMs ? { firstLookAfterMs: input.firstLookAfterMs } : {}) }) : undefined;
  if (footprint) watchers.push(footprint);
  for (const code of Object.values(KIND_CODE) as Array<{ watch?: KindWatch }>) {
    const watcher = code.watch && 'own' in code.watch ? code.watch.own(input) : undefined;
    if (watcher) watchers.push(watcher);
  }
  return {
    looked: footprint?.looked ?? Promise.resolve(),
    close() {
      for (const w of watchers) w.close();
    },
  };
}
