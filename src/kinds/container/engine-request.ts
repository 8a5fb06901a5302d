import { createHash } from 'node:crypto';
import type { ContainerResource } from '../../core/declaration/schema.js';
import type { CreateRequest } from './engine.js';

/** The labels every container the host makes carries: the runtime itself is the record. */
export const LABEL = { node: 'mesh-host.node', resource: 'mesh-host.resource', spec: 'mesh-host.spec', fields: 'mesh-host.fields' } as const;

/** The fields of a container that make it: a change to any of them replaces it. `state` is not one (a stop or a start). */
export interface Spec {
  name: string;
  /** `REF@sha256:…`, or `object:NAME@sha256:…` for an archive of the mesh. */
  image: string;
  command: string[] | null;
  /** Sorted by name. */
  env: Array<[string, string]>;
  /** Normalized (`IP:HOST:CONTAINER/proto`) and sorted. */
  ports: string[];
  /** Normalized (`HOST:CONTAINER:ro|rw`) and sorted. */
  volumes: string[];
  restart: string;
}

export type SpecField = keyof Spec;
const FIELDS: SpecField[] = ['name', 'image', 'command', 'env', 'ports', 'volumes', 'restart'];

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function imageName(image: ContainerResource['image']): string {
  return 'ref' in image ? image.ref : `object:${image.object}@sha256:${image.sha256}`;
}

const port = (p: string): string => {
  const [binding, proto = 'tcp'] = p.split('/');
  const parts = binding!.split(':');
  const [ip, host, inside] = parts.length === 3 ? parts : ['0.0.0.0', ...parts];
  return `${ip}:${Number(host)}:${Number(inside)}/${proto}`;
};

/** The fields of a container whose env holds no sealed value (kinds/container/sealed-env.ts opens or digests them first). */
export function specOf(r: ContainerResource): Spec {
  return {
    name: r.name,
    image: imageName(r.image),
    command: r.command ?? null,
    env: (Object.entries(r.env ?? {}) as Array<[string, string]>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ports: (r.ports ?? []).map(port).sort(),
    volumes: (r.volumes ?? []).map((v) => (v.split(':').length === 2 ? `${v}:rw` : v)).sort(),
    restart: r.restart ?? 'no',
  };
}

/**
 * Each field's digest (16 hex digits), and the whole spec's: the labels say which fields a replacement
 * changes without holding any value (a sensitive variable's value is in no label, no record, no step).
 */
export function digestsOf(spec: Spec): { spec: string; fields: Record<SpecField, string> } {
  const fields = Object.fromEntries(FIELDS.map((f) => [f, sha256(JSON.stringify(spec[f])).slice(0, 16)])) as Record<SpecField, string>;
  return { spec: sha256(JSON.stringify(FIELDS.map((f) => spec[f]))), fields };
}

/** `name=…,image=…`: the label a container carries of its fields' digests. */
export const fieldsLabel = (fields: Record<SpecField, string>) => FIELDS.map((f) => `${f}=${fields[f]}`).join(',');

/** The fields whose digests differ from a container's label; every field when the label cannot be read. */
export function fieldsThatDiffer(label: string | undefined, fields: Record<SpecField, string>): SpecField[] {
  const had = new Map((label ?? '').split(',').map((pair) => pair.split('=') as [string, string]));
  return FIELDS.filter((f) => had.get(f) !== fields[f]);
}

/** The labels a container made for this resource carries. */
export function labelsOf(node: string, r: ContainerResource, spec: Spec): Record<string, string> {
  const digests = digestsOf(spec);
  return { [LABEL.node]: node, [LABEL.resource]: r.id, [LABEL.spec]: digests.spec, [LABEL.fields]: fieldsLabel(digests.fields) };
}

/**
 * The engine's create request: `image` is what the engine knows the image by (a ref, or the loaded
 * archive's tag); `env` the values the container is given, when the spec holds digests of sealed ones.
 */
export function createRequest(node: string, r: ContainerResource, spec: Spec, image: string, env: Spec['env'] = spec.env): CreateRequest {
  const ports: CreateRequest['ports'] = {};
  for (const p of spec.ports) {
    const [binding, proto] = p.split('/') as [string, string];
    const [ip, host, inside] = binding.split(':') as [string, string, string];
    (ports[`${inside}/${proto}`] ??= []).push({ HostIp: ip, HostPort: host });
  }
  return {
    name: spec.name,
    image,
    ...(spec.command ? { command: spec.command } : {}),
    env: env.map(([k, v]) => `${k}=${v}`),
    labels: labelsOf(node, r, spec),
    ports,
    binds: spec.volumes,
    restart: spec.restart,
    stopTimeout: r.stopTimeout ?? DEFAULT_STOP_TIMEOUT_S,
  };
}

export const DEFAULT_STOP_TIMEOUT_S = 10;

/** Where a container sits (its name), and when it goes: with what runs, before the files it reads. */
export const CONTAINER_SHAPE = { target: (resource: { name: string }): string => resource.name, removalRank: 0 };
