// The directory's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// directory-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { AbsolutePath, Account, FileMode, Id, Take } from '../../core/vocabulary/fields.js';

export const DirectoryResource = Type.Object(
  {
    type: Type.Literal('directory'),
    id: Id,
    path: AbsolutePath,
    mode: Type.Optional(FileMode),
    owner: Type.Optional(Account),
    group: Type.Optional(Account),
    take: Type.Optional(Take),
  },
  { additionalProperties: false },
);
export type DirectoryResource = Static<typeof DirectoryResource>;
