import type { Change } from '../resources/changes.js';
import type { Step } from '../resources/types.js';

const short = (sha: string) => sha.slice(0, 12);
const entries = (n: number) => (n === 1 ? '1 entry' : `${n} entries`);

/**
 * The one place a change becomes words: `content (+3 −1 lines)`, `mode 0644→0640`, `restart (app-conf
 * changed)`. The plan's lines, the report's lines and the wire's `actions` are all made here.
 */
export function wordsOf(change: Change): string {
  switch (change.kind) {
    case 'take':
      return change.aside === undefined ? 'take' : `take (the container found is renamed ${change.aside} and stopped)`;
    case 'create':
    case 'hold':
    case 'remove':
    case 'leave':
    case 'start':
    case 'stop':
    case 'enable':
    case 'disable':
    case 'check':
      return change.kind;
    case 'give-back':
      if (change.what === 'container') return `give ${change.name} back${change.start ? ' and start it' : ''}`;
      return change.what === 'original' ? 'original given back' : 'original mode and owner given back';
    case 'content':
      if ('lines' in change) return `content (+${change.lines.added} −${change.lines.removed} lines)`;
      if ('bytes' in change) return `content (${change.bytes.from}→${change.bytes.to} bytes)`;
      return 'content (sensitive, not shown)';
    case 'mode':
    case 'owner':
    case 'group':
      return `${change.kind} ${change.from}→${change.to}`;
    case 'hard-link':
      return `hard link (${change.names} names) replaced`;
    case 'symlink-replaced':
      return 'symbolic link replaced by the file';
    case 'restart':
    case 'reload':
      return change.because.length > 0 ? `${change.kind} (${change.because.join(', ')} changed)` : change.kind;
    case 'replace':
      if (change.from !== undefined && change.to !== undefined) return `replace ${short(change.from)}→${short(change.to)}`;
      return `replace (${change.fields.join(', ') || 'labels'} differ${change.fields.length === 1 ? 's' : ''})`;
    case 'pull':
      return `pull ${change.ref}`;
    case 'load':
      return `load object ${change.object}`;
    case 'fetch':
      return `fetch ${change.object === undefined ? 'inline' : `object '${change.object}'`}`;
    case 'unpack':
      return `unpack ${short(change.sha256)}${change.entries === undefined ? '' : ` (${entries(change.entries)}, ${change.bytes} bytes${change.links ? `, ${change.links} link${change.links === 1 ? '' : 's'}` : ''})`}`;
    case 'finish-unpack':
      return `finish the unpack of ${short(change.sha256)} cut short`;
    case 'restore':
      return `restore ${entries(change.entries)}: ${change.drift.map((d) => `${d.name} (${d.why})`).join(', ')}${change.entries > change.drift.length ? ', …' : ''}`;
    case 'relink':
      return `relink ${change.entries === 1 ? '1 link' : `${change.entries} links`}: ${change.links.map((l) => `${l.name} → ${l.to}${l.hard ? ' (hard)' : ''}${l.was === undefined ? '' : ` (was ${l.was})`}`).join(', ')}${change.entries > change.links.length ? ', …' : ''}`;
    case 'remove-entries':
      return change.lacking ? `remove ${entries(change.entries)} the new archive lacks` : entries(change.entries);
  }
}

/** A step as the plan and the report carry it: its typed changes, and the same said as words for the wire's readers. */
export type Readable<S extends Step> = S & { actions: readonly string[] };

const NO_ACTIONS: readonly string[] = Object.freeze([]);

export function readable<S extends Step>(step: S): Readable<S> {
  return { ...step, actions: step.changes.length === 0 ? NO_ACTIONS : step.changes.map(wordsOf) };
}
