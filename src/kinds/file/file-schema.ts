// The file's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// file-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { AbsolutePath, Account, FileMode, Id, SealedValueSchema, Take } from '../../core/vocabulary/fields.js';

export const FileResource = Type.Object(
  {
    type: Type.Literal('file'),
    id: Id,
    path: AbsolutePath,
    content: Type.Union([Type.String({ maxLength: 64 * 1024 * 1024 }), SealedValueSchema]),
    encoding: Type.Optional(Type.Union([Type.Literal('utf8'), Type.Literal('base64')])),
    mode: Type.Optional(FileMode),
    owner: Type.Optional(Account),
    group: Type.Optional(Account),
    take: Type.Optional(Take),
    sensitive: Type.Optional(Type.Boolean({ description: 'the content is never shown: not in a diff, a plan, a log or a report' })),
  },
  { additionalProperties: false },
);
export type FileResource = Static<typeof FileResource>;
