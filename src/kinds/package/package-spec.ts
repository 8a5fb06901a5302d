import { kindSpec, type WordsOf } from '../../core/vocabulary/kind-spec.js';
import { packageNameProblem, versionProblem } from './debian-version-spec.js';
import type { PackageResource } from './package-schema.js';

export type { PackageResource } from './package-schema.js';

/** What a package's step does to it, with its versions. */
export type PackageAction = 'install' | 'upgrade' | 'downgrade' | 'remove';

/**
 * What a package's step changes: its own install, upgrade, downgrade or removal with its versions, or
 * what the one transaction does beyond the declared packages (dependencies pulled in, packages it must
 * remove), said on the first step of the transaction.
 */
export type PackageChange =
  | { kind: 'package'; action: PackageAction; from?: string; to?: string }
  | { kind: 'package-also'; install: string[]; remove: string[] };

export const PACKAGE_WORDS: WordsOf<PackageChange> = {
  package: (change) => {
    if (change.action === 'install') return `install ${change.to ?? '(the version offered)'}`;
    if (change.action === 'remove') return `remove ${change.from ?? ''}`.trim();
    return `${change.action} ${change.from}→${change.to}`;
  },
  'package-also': (change) =>
    [change.install.length > 0 ? `also installs ${change.install.join(', ')}` : '', change.remove.length > 0 ? `also removes ${change.remove.join(', ')}` : ''].filter(Boolean).join('; '),
};

/**
 * What the store keeps of a package: the version it was found at before the host acted on it (null: it
 * was not installed, the host installed it), and whether the declaration took it (then it is removed
 * when no longer declared, as one the host installed).
 */
export interface PackageKept {
  package?: { found: string | null; taken?: true };
}

export const packageSpec = kindSpec<PackageResource, PackageChange, PackageKept>({
  type: 'package',
  words: PACKAGE_WORDS,
  place: { field: 'name', what: 'package name', space: 'package' },
  rules: (resource, at) => {
    const problems = [];
    const name = packageNameProblem(resource.name);
    if (name) problems.push({ path: `${at}/name`, message: name });
    const version = resource.version === 'present' || resource.version === 'absent' ? undefined : versionProblem(resource.version);
    if (version) problems.push({ path: `${at}/version`, message: `${version}, nor 'present' or 'absent'` });
    return problems;
  },
});
