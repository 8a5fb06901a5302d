/**
 * Where mesh-host lives on a machine unless told otherwise (`--state-dir`, `--config`): the one place
 * the installer, the commands, the service definitions and the releases take these paths from.
 */

/** The state directory: the store, the outbox, the kept declaration, the releases. */
export const DEFAULT_STATE_DIR = '/var/lib/mesh-host';
/** The configuration's folder: host.json and the release the mesh wants. */
export const CONFIG_DIR = '/etc/mesh-host';
/** The configuration, written by genesis from the bundle and edited by operators. */
export const DEFAULT_CONFIG = `${CONFIG_DIR}/host.json`;
/** Each release unpacked under its version, `current` linking the one that runs (inside --root). */
export const RELEASES_DIR = `${DEFAULT_STATE_DIR}/releases`;
/** The link, in the releases' folder, to the release that runs. */
export const CURRENT = 'current';
/** A release's executable, in its folder. */
export const EXECUTABLE = 'mesh-host';
/** The file naming the release the mesh wants (inside --root). */
export const RELEASE_FILE = `${CONFIG_DIR}/release`;
