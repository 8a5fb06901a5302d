import Type, { type Static } from 'typebox';

import { NODE_ID_PATTERN } from './ids.js';
import { KIND_SPECS, type KindResource } from '../../kinds/kind-specs.js';
import { KIND_SCHEMAS } from '../../kinds/kind-schemas.js';

export type { DirectoryResource } from '../../kinds/directory/directory-spec.js';
export type { FileResource } from '../../kinds/file/file-spec.js';
export type { ArchiveResource } from '../../kinds/archive/archive-spec.js';
export type { ServiceResource } from '../../kinds/service/service-spec.js';
export type { ContainerResource } from '../../kinds/container/container-spec.js';

/** Each kind's schema by its type, in the order the registry of kinds lists them (the generated checks' order). */
export const RESOURCE_SCHEMAS = Object.fromEntries(KIND_SPECS.map((spec) => [spec.type, KIND_SCHEMAS[spec.type]])) as typeof KIND_SCHEMAS;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/**
 * True when the schemas list every kind of the specs and no other, and each kind's schema says exactly
 * the resource its spec is said with; `never` otherwise, and the line below does not compile.
 */
type SchemasMatchSpecs =
  Same<keyof typeof KIND_SCHEMAS, KindResource['type']> extends true
    ? { [T in keyof typeof KIND_SCHEMAS]: Same<Static<(typeof KIND_SCHEMAS)[T]>, Extract<KindResource, { type: T }>> }[keyof typeof KIND_SCHEMAS] extends true
      ? true
      : never
    : never;
export const SCHEMAS_MATCH_SPECS: SchemasMatchSpecs = true;

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

export type Resource = KindResource;
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
