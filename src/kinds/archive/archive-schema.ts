// The archive's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// archive-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { AbsolutePath, Account, Id, Take } from '../../core/vocabulary/fields.js';

/** Where an archive's bytes come from: inline (small), or an object of the mesh's archive store. */
const ArchiveSource = Type.Union([
  Type.Object({ inline: Type.String({ minLength: 1, maxLength: 256 * 1024, pattern: '^[A-Za-z0-9+/]*={0,2}$', description: 'a base64 tar or tar.gz, 256 KiB encoded at most' }) }, { additionalProperties: false }),
  Type.Object({ object: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.+=@/-]{0,254}$', description: "an object's name in the bucket mesh_archives" }) }, { additionalProperties: false }),
]);

export const ArchiveResource = Type.Object(
  {
    type: Type.Literal('archive'),
    id: Id,
    path: AbsolutePath,
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'the sha256 (hex) of the archive file' }),
    source: ArchiveSource,
    owner: Type.Optional(Account),
    group: Type.Optional(Account),
    take: Type.Optional(Take),
  },
  { additionalProperties: false },
);
export type ArchiveResource = Static<typeof ArchiveResource>;
