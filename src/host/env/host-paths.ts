/** Where a host keeps what it is: its state, its configuration, and the root its declared paths are under. */
export interface HostPaths {
  stateDir: string;
  configPath: string;
  root: string;
}

/** The newest declaration the mesh said and this host accepted, the bytes as the link delivered them. */
export const KEPT_DECLARATION = 'declared.json';
/** Which value of the node's key the kept declaration was: `{revision, digest}`, so that a restart reading it again is not a new delivery. */
export const KEPT_REVISION = 'declared.revision';
/** The bundle genesis applied, carried under the state directory for the reconcile before the mesh speaks. */
export const CARRIED_BUNDLE = 'bundle.json';
/** The host's credentials, when the genesis bundle carries them (0600). */
export const CARRIED_CREDS = 'node.creds';
