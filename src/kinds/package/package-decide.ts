import { CREATE, HOLD, LEAVE, REMOVE, TAKE, type Change } from '../../engine/converge/changes.js';
import { HELD_REASON } from '../../engine/converge/ownership.js';
import type { ResourceRecord } from '../../core/store/state.js';
import type { Verb } from '../../engine/converge/handler-types.js';
import { compareVersions } from './debian-version-spec.js';
import type { Installed, Operation } from './package-manager.js';
import type { PackageAction, PackageKept, PackageResource } from './package-spec.js';

/** What the second look must find of a package the transaction acted on. */
export type Wanted = { installed: true; version?: string } | { installed: false };

/**
 * What the check decided for one package, as data: its step, the operation it adds to the transaction
 * (none: nothing to do there), what the second look must find, and what the store keeps of it after.
 */
export interface Decision {
  resource: string;
  name: string;
  verb: Verb;
  changes: Change[];
  detail?: string;
  op?: Operation;
  wanted?: Wanted;
  /** Kept after the step: the found version and whether taken; `forget`: the record goes. */
  keep?: NonNullable<PackageKept['package']> | 'forget';
  /** Why the step cannot be applied (a version no repository offers): the plan's problem. */
  problem?: string;
}

const ABSENT: Installed = { version: '', state: 'absent', status: 'un' };

/** What a package's step does to it, from what is installed to what is wanted. */
export function actionOf(now: Installed, to: string | undefined): { action: PackageAction; from?: string; to?: string } {
  if (to === undefined) return { action: 'install' };
  if (now.state === 'absent' || now.version === to) return { action: 'install', to };
  return { action: compareVersions(to, now.version) < 0 ? 'downgrade' : 'upgrade', from: now.version, to };
}

function matches(resource: PackageResource, now: Installed): boolean {
  if (resource.version === 'absent') return now.state === 'absent';
  if (now.state !== 'installed') return false;
  return resource.version === 'present' || now.version === resource.version;
}

/**
 * A declared package. Found installed and not made by the host: held on an adopted machine (left as
 * found) unless taken, acted on otherwise, the version found kept to give back. One found as declared
 * is left alone, unless the declaration takes it (then it is the host's to remove).
 */
export function decideDeclared(resource: PackageResource, found: Installed | undefined, record: ResourceRecord | undefined, verdict: 'take' | 'hold'): Decision {
  const now = found ?? ABSENT;
  const base = { resource: resource.id, name: resource.name };
  if (matches(resource, now)) {
    if (record || resource.take !== true || now.state === 'absent') return { ...base, verb: 'none', changes: [] };
    return { ...base, verb: 'take', changes: [TAKE], keep: { found: now.version, taken: true }, detail: `found installed at ${now.version}; taken: removed when no longer declared` };
  }
  const absent = resource.version === 'absent';
  const to = absent || resource.version === 'present' ? undefined : resource.version;
  const change: Change = absent ? { kind: 'package', action: 'remove', from: now.version } : { kind: 'package', ...actionOf(now, to) };
  const op: Operation = absent ? { name: resource.name, remove: true } : { name: resource.name, ...(to !== undefined ? { version: to } : {}) };
  const wanted: Wanted = absent ? { installed: false } : { installed: true, ...(to !== undefined ? { version: to } : {}) };
  const taken = resource.take === true || record?.package?.taken === true ? { taken: true as const } : {};
  if (record) return { ...base, verb: 'update', changes: [change], op, wanted, keep: { found: record.created ? null : (record.package?.found ?? null), ...taken } };
  if (now.state === 'absent') return { ...base, verb: 'create', changes: [CREATE, change], op, wanted, keep: { found: null } };
  if (verdict === 'hold') return { ...base, verb: 'hold', changes: [HOLD], detail: `${HELD_REASON}: installed at ${now.version}${absent ? ', declared absent' : to ? `, declared ${to}` : ''}` };
  return { ...base, verb: 'take', changes: [TAKE, change], op, wanted, keep: { found: now.version, ...taken }, detail: `found installed at ${now.version}; that version is given back when no longer declared` };
}

/**
 * A package no longer declared. One the host installed, or that the declaration took, is removed; one
 * found installed is given back at the version found, where a repository still offers it (otherwise
 * left, and the report says so); one found as it was is left installed.
 */
export function decideRemoval(record: ResourceRecord, found: Installed | undefined, offered: ReadonlyMap<string, string[]>): Decision {
  const now = found ?? ABSENT;
  const base = { resource: record.id, name: record.target };
  const foundVersion = record.created ? null : (record.package?.found ?? null);
  if (foundVersion === null || record.package?.taken) {
    if (now.state === 'absent') return { ...base, verb: 'remove', changes: [REMOVE], detail: 'already gone', keep: 'forget' };
    return { ...base, verb: 'remove', changes: [REMOVE, { kind: 'package', action: 'remove', from: now.version }], op: { name: record.target, remove: true }, wanted: { installed: false }, keep: 'forget' };
  }
  if (now.state === 'installed' && now.version === foundVersion) return { ...base, verb: 'remove', changes: [LEAVE], detail: `installed before the host came (${foundVersion}): kept, as found`, keep: 'forget' };
  if (!(offered.get(record.target) ?? []).includes(foundVersion)) {
    return { ...base, verb: 'remove', changes: [LEAVE], detail: `could not give back version ${foundVersion}, found before the host: no repository offers it now; left ${now.state === 'absent' ? 'absent' : `at ${now.version}`}`, keep: 'forget' };
  }
  return {
    ...base,
    verb: 'remove',
    changes: [{ kind: 'give-back', what: 'original' }, { kind: 'package', ...actionOf(now, foundVersion) }],
    op: { name: record.target, version: foundVersion },
    wanted: { installed: true, version: foundVersion },
    keep: 'forget',
    detail: `given back at ${foundVersion}, the version found before the host came`,
  };
}

/** The version a removal would give back, when it gives one back: the repositories are asked for these. */
export function giveBackVersion(record: ResourceRecord, found: Installed | undefined): string | undefined {
  const foundVersion = record.created ? null : (record.package?.found ?? null);
  if (foundVersion === null || record.package?.taken) return undefined;
  const now = found ?? ABSENT;
  return now.state === 'installed' && now.version === foundVersion ? undefined : foundVersion;
}
