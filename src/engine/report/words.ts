import type { Change } from '../converge/changes.js';
import { KIND_WORDS } from '../../kinds/kind-specs.js';
import type { Step } from '../converge/handler-types.js';

const short = (sha: string) => sha.slice(0, 12);

/**
 * The one place a change becomes words, with each kind's words for the changes only it makes:
 * `content (+3 −1 lines)`, `mode 0644→0640`, `restart (app-conf changed)`. The plan's lines, the
 * report's lines and the wire's `actions` are all made here.
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
    case 'mode':
    case 'owner':
    case 'group':
      return `${change.kind} ${change.from}→${change.to}`;
    case 'restart':
    case 'reload':
      return change.because.length > 0 ? `${change.kind} (${change.because.join(', ')} changed)` : change.kind;
    case 'replace':
      if (change.from !== undefined && change.to !== undefined) return `replace ${short(change.from)}→${short(change.to)}`;
      return `replace (${change.fields.join(', ') || 'labels'} differ${change.fields.length === 1 ? 's' : ''})`;
    default:
      // A change only some kinds make: its kind's own words.
      return (KIND_WORDS[change.kind] as (c: typeof change) => string)(change);
  }
}

/** A step as the plan and the report carry it: its typed changes, and the same said as words for the wire's readers. */
export type Readable<S extends Step> = S & { actions: readonly string[] };

const NO_ACTIONS: readonly string[] = Object.freeze([]);

export function readable<S extends Step>(step: S): Readable<S> {
  return { ...step, actions: step.changes.length === 0 ? NO_ACTIONS : step.changes.map(wordsOf) };
}
