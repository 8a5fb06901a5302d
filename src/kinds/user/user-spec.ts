import { kindSpec } from '../../core/vocabulary/kind-spec.js';
import { pathProblem } from '../../core/vocabulary/paths.js';
import type { AccountChange } from '../group/group-spec.js';
import type { UserResource } from './user-schema.js';

export type { UserResource } from './user-schema.js';

/** What the store keeps of a user: its uid, and for one found and taken, its entry as found (given back on removal). */
export interface UserKept {
  unixUser?: {
    uid: number;
    original?: { uid: number; gid: number; comment: string; home: string; shell: string; groups: string[]; hash?: string };
  };
}

export const userSpec = kindSpec<UserResource, AccountChange, UserKept>({
  type: 'user',
  place: { field: 'name', what: 'user name', space: 'user' },
  rules: (user, at) => [
    ...(['home', 'shell'] as const).flatMap((field) => {
      const why = user[field] === undefined ? undefined : pathProblem(user[field]);
      return why ? [{ path: `${at}/${field}`, message: why }] : [];
    }),
    ...(user.groups ?? []).flatMap((group, i) => ((user.groups ?? []).indexOf(group) < i ? [{ path: `${at}/groups/${i}`, message: `group '${group}' is named twice` }] : [])),
  ],
});
