/**
 * What a host presents to the servers: paths on the host, as its configuration and a bundle carry
 * them. Plain data, so that the configuration and the bundle can name it without the transport.
 */
export interface LinkAuth {
  /** A NATS credentials file (JWT and nkey seed). */
  creds?: string;
  /** A file holding a user nkey seed. */
  nkeySeed?: string;
  tls?: { ca?: string; cert?: string; key?: string };
}

/** The credentials of a configuration or a bundle, and nothing else; absent ones left out. */
export function linkAuthOf(source: LinkAuth): LinkAuth {
  return { ...(source.creds ? { creds: source.creds } : {}), ...(source.nkeySeed ? { nkeySeed: source.nkeySeed } : {}), ...(source.tls ? { tls: source.tls } : {}) };
}
