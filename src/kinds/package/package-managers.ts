import type { CommandRunner } from '../../core/system/runner.js';
import { aptManager, aptUnder } from './apt-manager.js';
import type { PackageManager } from './package-manager.js';

/** One manager this host can drive: how it is recognised under a root, and the manager made for that root. */
interface Implementation {
  name: string;
  under(root: string): Promise<boolean>;
  make(runner: CommandRunner, root: string): PackageManager;
}

/** The managers built today, in the order they are looked for. apk or rpm is one more entry here. */
const IMPLEMENTATIONS: readonly Implementation[] = [{ name: 'dpkg/apt', under: aptUnder, make: aptManager }];

/** The package manager this host drives under a root, or why there is none. */
export type ManagerFor = (root: string) => Promise<PackageManager | string>;

/** The first manager found under the root: the one the package kind acts through and the inventory names. */
export const foundManager =
  (runner: CommandRunner): ManagerFor =>
  async (root) => {
    for (const implementation of IMPLEMENTATIONS) if (await implementation.under(root)) return implementation.make(runner, root);
    return `no package manager this host drives is found under ${root} (it drives ${IMPLEMENTATIONS.map((i) => i.name).join(', ')})`;
  };
