import Type, { type Static } from 'typebox';

import { NODE_ID_PATTERN } from './ids.js';
const Id = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$', description: 'a stable resource id' });
const AbsolutePath = Type.String({ minLength: 2, maxLength: 4096, pattern: '^/', description: 'an absolute, normal path' });
const Mode = Type.String({ pattern: '^[0-7]{3,4}$', description: "an octal mode such as '0644'" });
const Account = Type.String({ pattern: '^([a-z_][a-z0-9_-]{0,31}\\$?|[0-9]{1,10})$', description: 'a user or group name, or a number' });
const Take = Type.Boolean({ description: 'take over what is found here (the original is kept and given back on removal)' });
/** A lock file the service or container writes while it must not be interrupted (balena's update locks). */
const InhibitWhile = Type.String({
  minLength: 2,
  maxLength: 4096,
  pattern: '^/',
  description: "a lock file holding its holder's PID: while it exists and the holder lives, this resource's restart or replacement waits",
});
const InhibitMaxMs = Type.Integer({ minimum: 0, maximum: 7 * 24 * 3_600_000, description: 'how long a restart or replacement may wait for the lock (ms; default 600000): then it goes ahead' });

export const DirectoryResource = Type.Object(
  {
    type: Type.Literal('directory'),
    id: Id,
    path: AbsolutePath,
    mode: Type.Optional(Mode),
    owner: Type.Optional(Account),
    group: Type.Optional(Account),
    take: Type.Optional(Take),
  },
  { additionalProperties: false },
);

export const FileResource = Type.Object(
  {
    type: Type.Literal('file'),
    id: Id,
    path: AbsolutePath,
    content: Type.String({ maxLength: 64 * 1024 * 1024 }),
    encoding: Type.Optional(Type.Union([Type.Literal('utf8'), Type.Literal('base64')])),
    mode: Type.Optional(Mode),
    owner: Type.Optional(Account),
    group: Type.Optional(Account),
    take: Type.Optional(Take),
    sensitive: Type.Optional(Type.Boolean({ description: 'the content is never shown: not in a diff, a plan, a log or a report' })),
  },
  { additionalProperties: false },
);

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

export const ServiceResource = Type.Object(
  {
    type: Type.Literal('service'),
    id: Id,
    unit: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9:_.@\\\\-]{0,254}$', description: 'a unit or service name' }),
    state: Type.Union([Type.Literal('running'), Type.Literal('stopped')]),
    enabled: Type.Optional(Type.Boolean()),
    restartOn: Type.Optional(Type.Array(Id, { maxItems: 1024 })),
    reload: Type.Optional(Type.Boolean({ description: 'reload instead of restart when a restartOn file or archive changed' })),
    inhibitWhile: Type.Optional(InhibitWhile),
    inhibitMaxMs: Type.Optional(InhibitMaxMs),
  },
  { additionalProperties: false },
);

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
    env: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,255}$' }), Type.String({ maxLength: 64 * 1024 }))),
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

export const RESOURCE_SCHEMAS = {
  directory: DirectoryResource,
  file: FileResource,
  archive: ArchiveResource,
  service: ServiceResource,
  container: ContainerResource,
} as const;

/** The declaration without its resources: they are checked one by one against the schema of their type. */
export const DeclarationHead = Type.Object(
  {
    version: Type.Literal(1),
    node: Type.String({ pattern: NODE_ID_PATTERN }),
    mode: Type.Union([Type.Literal('adopted'), Type.Literal('converged')]),
    epoch: Type.Optional(Type.Integer({ minimum: 0 })),
    sequence: Type.Integer({ minimum: 0 }),
    resources: Type.Array(Type.Object({ type: Type.String() }), { maxItems: 100_000 }),
  },
  { additionalProperties: false },
);

export type DirectoryResource = Static<typeof DirectoryResource>;
export type FileResource = Static<typeof FileResource>;
export type ArchiveResource = Static<typeof ArchiveResource>;
export type ServiceResource = Static<typeof ServiceResource>;
export type ContainerResource = Static<typeof ContainerResource>;
export type Resource = DirectoryResource | FileResource | ArchiveResource | ServiceResource | ContainerResource;
export type ResourceType = Resource['type'];
export type Mode = 'adopted' | 'converged';

export interface Declaration {
  version: 1;
  node: string;
  mode: Mode;
  epoch?: number;
  sequence: number;
  resources: Resource[];
}
