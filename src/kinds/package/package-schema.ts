// The package's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// package-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { Id } from '../../core/vocabulary/fields.js';

export const PackageResource = Type.Object(
  {
    type: Type.Literal('package'),
    id: Id,
    /** The package's name, as its manager names it (Debian's: `nginx`, `libssl3`). */
    name: Type.String({ minLength: 1, maxLength: 128, description: 'a package name' }),
    /**
     * The version to have installed, exactly (`1.22.1-9`, an epoch as `1:2.3-4`); `present`: installed,
     * at whatever version the repositories offer when it is not; `absent`: not installed.
     */
    version: Type.String({ minLength: 1, maxLength: 128, description: "a version, 'present' or 'absent'" }),
    /** Found installed: the host acts on it, and removes it when it is no longer declared (without take it is kept then, at the version found). */
    take: Type.Optional(Type.Boolean({ description: 'take over a package found installed: removed, not kept, when no longer declared' })),
  },
  { additionalProperties: false },
);
export type PackageResource = Static<typeof PackageResource>;
