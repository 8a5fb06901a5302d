// The container's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// container-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { Id, InhibitMaxMs, InhibitWhile, SealedValueSchema, Take } from '../../core/vocabulary/fields.js';

/** An image by its digest in a registry, or an image archive (`docker save`) in the mesh's archive store. */
const ContainerImage = Type.Union([
  Type.Object({ ref: Type.String({ minLength: 1, maxLength: 1024, description: 'NAME@sha256:DIGEST: a tag is not a version' }) }, { additionalProperties: false }),
  Type.Object(
    {
      object: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.+=@/-]{0,254}$', description: "an image archive's name in the bucket mesh_archives" }),
      sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'the sha256 (hex) of the image archive' }),
    },
    { additionalProperties: false },
  ),
]);

export const ContainerResource = Type.Object(
  {
    type: Type.Literal('container'),
    id: Id,
    name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$', description: "the container's name in the engine" }),
    image: ContainerImage,
    command: Type.Optional(Type.Array(Type.String({ maxLength: 64 * 1024 }), { maxItems: 1024 })),
    env: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,255}$' }), Type.Union([Type.String({ maxLength: 64 * 1024 }), SealedValueSchema]))),
    sensitiveEnv: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,255}$' }), { maxItems: 1024, description: 'env names whose values are never shown' })),
    ports: Type.Optional(Type.Array(Type.String({ pattern: '^(\\d{1,3}(\\.\\d{1,3}){3}:)?\\d{1,5}:\\d{1,5}(/(tcp|udp))?$', description: '[IP:]HOSTPORT:CONTAINERPORT[/tcp|udp]' }), { maxItems: 1024 })),
    volumes: Type.Optional(Type.Array(Type.String({ pattern: '^/[^:]*:/[^:]*(:(ro|rw))?$', description: 'HOSTPATH:CONTAINERPATH[:ro|rw]' }), { maxItems: 1024 })),
    restart: Type.Optional(Type.Union([Type.Literal('no'), Type.Literal('on-failure'), Type.Literal('always'), Type.Literal('unless-stopped')])),
    state: Type.Union([Type.Literal('running'), Type.Literal('stopped')]),
    restartOn: Type.Optional(Type.Array(Id, { maxItems: 1024 })),
    stopTimeout: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, description: 'seconds a stop waits before it kills (default 10)' })),
    inhibitWhile: Type.Optional(InhibitWhile),
    inhibitMaxMs: Type.Optional(InhibitMaxMs),
    take: Type.Optional(Take),
  },
  { additionalProperties: false },
);
export type ContainerResource = Static<typeof ContainerResource>;
