// The group's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// group-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { Id, Take } from '../../core/vocabulary/fields.js';

/** A user or group name as useradd and groupadd take it (Debian's NAME_REGEX, a trailing $ for machine accounts). */
export const AccountName = Type.String({ pattern: '^[a-z_][a-z0-9_-]{0,31}\\$?$', description: 'a user or group name' });
/** A user or group id: 0 is root's, and 65534 nobody's; ids above 2^31 are not portable. */
export const AccountId = Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 });

export const GroupResource = Type.Object(
  {
    type: Type.Literal('group'),
    id: Id,
    name: AccountName,
    gid: Type.Optional(AccountId),
    system: Type.Optional(Type.Boolean({ description: 'a system group: its gid is picked from the system range' })),
    take: Type.Optional(Take),
  },
  { additionalProperties: false },
);
export type GroupResource = Static<typeof GroupResource>;
