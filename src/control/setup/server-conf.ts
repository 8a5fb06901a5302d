import { HUB_DOMAIN } from '../../link/wire.js';

/** What a server in operator mode is told of the mesh's accounts: their JWTs, no secret. */
export interface PublicAccounts {
  operator: { jwt: string };
  account: { publicKey: string; jwt: string };
  system: { publicKey: string; jwt: string };
}

/** One nats-server of the mesh: where clients reach it and, in a cluster, where the others route to it. */
export interface ServerPlace {
  name: string;
  host: string;
  port: number;
  clusterPort?: number;
  /** Where a site's leaf node connects to it. */
  leafPort?: number;
  /** Where its JetStream keeps the mesh's streams. */
  storeDir: string;
  /** Where its account resolver keeps the accounts' JWTs. */
  resolverDir: string;
}

export const DEFAULT_CLIENT_PORT = 4222;
export const DEFAULT_CLUSTER_PORT = 6222;
export const DEFAULT_LEAF_PORT = 7422;
export const CLUSTER_NAME = 'mesh';

/** A string in the server's configuration syntax. */
export const quoted = (s: string) => JSON.stringify(s);
/** A host in a URL: an IPv6 address in brackets. */
export const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);

export const clientUrl = (place: ServerPlace) => `nats://${urlHost(place.host)}:${place.port}`;
/** Where a leaf node reaches this server (none when it takes no leaf nodes). */
export const leafUrl = (place: ServerPlace) => (place.leafPort === undefined ? undefined : `nats-leaf://${urlHost(place.host)}:${place.leafPort}`);

/**
 * The lines that put a server in operator mode over the mesh's accounts: it trusts the operator, and
 * keeps the accounts' JWTs in NATS's full account resolver, a folder of its own (`resolverDir`). The
 * accounts as meshctl init made them are preloaded, so a server starts admitting the mesh's clients at
 * once; every later version of an account (a host's user revoked) is pushed to the running servers by
 * meshctl, signed by the operator, on `$SYS.REQ.CLAIMS.UPDATE`, and each server keeps it in that folder
 * over the preload (a resolver keeps the JWT issued later). Nothing in this file changes after init.
 */
export function operatorModeLines(accounts: PublicAccounts, resolverDir: string): string[] {
  return [
    `operator: ${accounts.operator.jwt}`,
    `system_account: ${accounts.system.publicKey}`,
    ...resolverLines(resolverDir),
    'resolver_preload: {',
    `  ${accounts.account.publicKey}: ${accounts.account.jwt}`,
    `  ${accounts.system.publicKey}: ${accounts.system.jwt}`,
    '}',
  ];
}

/**
 * NATS's full account resolver: every account JWT kept in `dir`, updated by a signed push, never
 * deleted by one. A server down during a push is given it again by `meshctl account-push` (NATS's own
 * exchange between resolvers, every two minutes, is not relied on).
 */
export function resolverLines(dir: string): string[] {
  return ['resolver: {', '  type: full', `  dir: ${quoted(dir)}`, '  allow_delete: false', '  interval: "2m"', '}'];
}

/**
 * The configuration of one server of the mesh: its name, where it listens (for clients, and for the
 * leaf nodes of sites), JetStream on, operator mode, and in a cluster of more than one its routes to
 * every other member. A leaf node authenticates like any client, with credentials of the mesh's account.
 */
export function serverConfig(place: ServerPlace, all: ServerPlace[], accounts: PublicAccounts): string {
  const others = all.filter((p) => p !== place);
  const cluster = others.length === 0
    ? []
    : [
        'cluster {',
        `  name: ${CLUSTER_NAME}`,
        `  listen: ${quoted(`${urlHost(place.host)}:${place.clusterPort ?? DEFAULT_CLUSTER_PORT}`)}`,
        '  routes: [',
        ...others.map((o) => `    ${quoted(`nats://${urlHost(o.host)}:${o.clusterPort ?? DEFAULT_CLUSTER_PORT}`)}`),
        '  ]',
        '}',
      ];
  return [
    `# nats-server for the mesh, made by meshctl init: ${place.name} of ${all.length}`,
    `server_name: ${quoted(place.name)}`,
    `listen: ${quoted(`${urlHost(place.host)}:${place.port}`)}`,
    'jetstream {',
    `  store_dir: ${quoted(place.storeDir)}`,
    `  domain: ${quoted(HUB_DOMAIN)}`,
    '}',
    ...(place.leafPort === undefined ? [] : ['leafnodes {', `  listen: ${quoted(`${urlHost(place.host)}:${place.leafPort}`)}`, '}']),
    ...cluster,
    ...operatorModeLines(accounts, place.resolverDir),
    '',
  ].join('\n');
}

/**
 * Where each of `count` servers listens. One host for all (loopback by default): ports counted up from
 * the first, so they do not collide. As many hosts as servers: one server a host, each on the same
 * ports. Ports may also be given one a server.
 */
export function placeServers(options: { count: number; hosts: string[]; ports: number[]; clusterPorts: number[]; leafPorts?: number[]; storeDir: (name: string) => string; resolverDir: (name: string) => string }): ServerPlace[] | string {
  const { count, hosts } = options;
  if (hosts.length !== 1 && hosts.length !== count) return `${hosts.length} hosts for ${count} servers: give one host (every server on it) or one a server`;
  const portsOf = (given: number[], fallback: number, what: string): number[] | string => {
    const list = given.length === 0 ? [fallback] : given;
    if (list.length === count) return list;
    if (list.length !== 1) return `${list.length} ${what} for ${count} servers: give one (counted up on one host) or one a server`;
    return Array.from({ length: count }, (_, i) => list[0]! + (hosts.length === 1 ? i : 0));
  };
  const ports = portsOf(options.ports, DEFAULT_CLIENT_PORT, 'ports');
  const clusterPorts = portsOf(options.clusterPorts, DEFAULT_CLUSTER_PORT, 'cluster ports');
  const leafPorts = portsOf(options.leafPorts ?? [], DEFAULT_LEAF_PORT, 'leaf ports');
  if (typeof ports === 'string') return ports;
  if (typeof clusterPorts === 'string') return clusterPorts;
  if (typeof leafPorts === 'string') return leafPorts;
  return Array.from({ length: count }, (_, i) => {
    const name = count === 1 ? 'mesh' : `mesh-${i + 1}`;
    const place: ServerPlace = { name, host: hosts.length === 1 ? hosts[0]! : hosts[i]!, port: ports[i]!, leafPort: leafPorts[i]!, storeDir: options.storeDir(name), resolverDir: options.resolverDir(name) };
    return count === 1 ? place : { ...place, clusterPort: clusterPorts[i]! };
  });
}
