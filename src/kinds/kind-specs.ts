import type { KindSpec } from '../core/vocabulary/kind-spec.js';
import { archiveSpec } from './archive/archive-spec.js';
import { containerSpec } from './container/container-spec.js';
import { directorySpec } from './directory/directory-spec.js';
import { fileSpec } from './file/file-spec.js';
import { serviceSpec } from './service/service-spec.js';
import { groupSpec } from './group/group-spec.js';
import { userSpec } from './user/user-spec.js';
import { packageSpec } from './package/package-spec.js';

/**
 * The registry of kinds, its first half: every kind of resource a declaration may hold, one entry each,
 * in the order the words of a refusal list them. The resource's union, the validation, the changes a
 * step may carry, their words and the fields a record keeps are all read from here; each kind's code
 * (its handler, its watcher) is listed in the other half, kind-handlers.ts, and each kind's schema in
 * kind-schemas.ts (read only by the schema's users), keyed by the same types.
 */
export const KIND_SPECS = [directorySpec, fileSpec, archiveSpec, serviceSpec, containerSpec, groupSpec, userSpec, packageSpec] as const;

type Spec = (typeof KIND_SPECS)[number];
/** A resource of any kind, as each kind's schema says it (the type its spec is said with). */
export type KindResource = NonNullable<Spec['resource']>;

/** The changes only some kinds make: each kind's own, from its spec. */
export type KindChange = NonNullable<Spec['changes']>;

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;
/** What the store keeps of a resource beyond what it keeps of every one: each kind's own fields, from its spec. */
export type KindRecordFields = Intersection<NonNullable<Spec['kept']>>;

/** The words of the changes only some kinds make, by change kind, from each kind's spec. */
export const KIND_WORDS = Object.assign({}, ...KIND_SPECS.map((spec) => (spec as KindSpec<{ type: string }, { kind: string }>).words ?? {})) as {
  [K in KindChange['kind']]: (change: Extract<KindChange, { kind: K }>) => string;
};
