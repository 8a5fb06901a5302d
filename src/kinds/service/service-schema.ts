// The service's schema, as TypeBox builds it. Only the schema's users import it (the build of the generated
// checks, the explanation of an invalid declaration), through src/kinds/kind-schemas.ts; its spec,
// service-spec.ts, imports its type alone, so that an apply never loads TypeBox.
import Type, { type Static } from 'typebox';
import { Id, InhibitMaxMs, InhibitWhile } from '../../core/vocabulary/fields.js';

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
export type ServiceResource = Static<typeof ServiceResource>;
