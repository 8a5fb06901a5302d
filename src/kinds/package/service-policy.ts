import { chmod, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * While a transaction runs, no package's maintainer script starts a service: Debian's scripts start
 * them through invoke-rc.d and deb-systemd-invoke, which both ask /usr/sbin/policy-rc.d first, and
 * exit status 101 is "action forbidden". A service the declaration wants running is its service
 * resource's to start, after the packages (services come after packages in an apply).
 *
 * The machine's own policy-rc.d, if it has one, is set aside beside it for the transaction and put back
 * after, exactly as it was. A host stopped in the middle leaves ours (or the machine's set aside): the
 * next transaction finds them by their name and content and mends that first.
 */
export const OUR_POLICY = '#!/bin/sh\n# mesh-host: no service is started by a package while the host installs or removes packages.\nexit 101\n';

const policyPath = (root: string) => join(root, 'usr/sbin/policy-rc.d');
const asidePath = (root: string) => `${policyPath(root)}.mesh-host-aside`;

const exists = async (path: string) => {
  try {
    await readFile(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
};

/** A transaction stopped in the middle left ours, or the machine's set aside: the machine's policy as it was. */
async function mend(root: string): Promise<void> {
  const path = policyPath(root);
  if (await exists(asidePath(root))) await rename(asidePath(root), path);
  else if ((await readFile(path, 'utf8').catch(() => '')) === OUR_POLICY) await rm(path, { force: true });
}

/** Runs `act` with services kept from starting under `root`; the machine's policy is as it was after. */
export async function withServicesHeld<T>(root: string, act: () => Promise<T>): Promise<T> {
  const path = policyPath(root);
  await mend(root);
  const hadOwn = await exists(path);
  // Renames, never writes through: a link at the path is moved aside as the link it is.
  if (hadOwn) await rename(path, asidePath(root));
  const ours = `${path}.mesh-host-new`;
  await writeFile(ours, OUR_POLICY, { mode: 0o755 });
  await chmod(ours, 0o755);
  await rename(ours, path);
  try {
    return await act();
  } finally {
    await rm(path, { force: true });
    if (hadOwn) await rename(asidePath(root), path);
  }
}
