import { kindSpec, type WordsOf } from '../../core/vocabulary/kind-spec.js';
import type { GroupResource } from './group-schema.js';

export type { GroupResource } from './group-schema.js';

/** What an account's step changes beyond what every kind may: one field of its entry, or its password (never shown). */
export type AccountChange = { kind: 'field'; field: string; from: string; to: string } | { kind: 'password' } | { kind: 'groups'; added: string[]; removed: string[] };

export const ACCOUNT_WORDS: WordsOf<AccountChange> = {
  field: (change) => `${change.field} ${change.from || '(none)'}→${change.to || '(none)'}`,
  password: () => 'password (hashed, not shown)',
  groups: (change) => `groups${change.added.map((g) => ` +${g}`).join('')}${change.removed.map((g) => ` −${g}`).join('')}`,
};

/** What the store keeps of a group: its gid, and for one found and taken, the gid it had (given back on removal). */
export interface GroupKept {
  unixGroup?: { gid: number; original?: { gid: number } };
}

export const groupSpec = kindSpec<GroupResource, AccountChange, GroupKept>({
  type: 'group',
  words: ACCOUNT_WORDS,
  place: { field: 'name', what: 'group name', space: 'group' },
});
