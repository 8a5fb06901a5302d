// The user's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// user-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { AbsolutePath, Id, Take } from '../../core/vocabulary/fields.js';
import { AccountId, AccountName } from '../group/group-schema.js';

/**
 * A password is declared hashed (crypt(3): `$6$…`, `$y$…`), or locked (`!…`, `*`): never in clear, so that
 * it is never in a declaration, a report or a log.
 */
const Password = Type.Object(
  { hashed: Type.String({ minLength: 1, maxLength: 512, pattern: '^(\\$[0-9a-z]+\\$[^:\\n]+|![^:\\n]*|\\*)$', description: 'a crypt(3) hash, or ! or * for a locked account' }) },
  { additionalProperties: false },
);

export const UserResource = Type.Object(
  {
    type: Type.Literal('user'),
    id: Id,
    name: AccountName,
    uid: Type.Optional(AccountId),
    /** Its primary group, by name or gid (default: a group of its own name, made with it). */
    group: Type.Optional(Type.Union([AccountName, AccountId])),
    /** Its other groups, by name: exactly these. */
    groups: Type.Optional(Type.Array(AccountName, { maxItems: 256 })),
    comment: Type.Optional(Type.String({ maxLength: 256, pattern: '^[^:\\n]*$', description: 'the GECOS field' })),
    home: Type.Optional(AbsolutePath),
    shell: Type.Optional(AbsolutePath),
    system: Type.Optional(Type.Boolean({ description: 'a system account: its uid is picked from the system range, and no home is made' })),
    password: Type.Optional(Password),
    take: Type.Optional(Take),
  },
  { additionalProperties: false },
);
export type UserResource = Static<typeof UserResource>;
