import { DECLARED_SUBJECTS, HUB_DOMAIN, REPORTS_SUBJECTS, TRUST_NOTICE_SUBJECTS } from '../../link/wire.js';
import { operatorModeLines, quoted, urlHost, type PublicAccounts } from './server-conf.js';

/** A site's leaf node: where the site's hosts reach it, and the hub's servers it connects to. */
export interface LeafPlace {
  site: string;
  host: string;
  port: number;
  /** The hub's leaf node URLs (nats-leaf://…): every server of the hub, the leaf picks one that answers. */
  hubs: string[];
  /** The leaf's own credentials (a user of the mesh's account), as the leaf's server will find them. */
  credsPath: string;
  /** Where its JetStream keeps the site's copy of the declarations and the reports not yet at the hub. */
  storeDir: string;
  /** Where its account resolver keeps the accounts' JWTs. */
  resolverDir: string;
  /** Its user of the system account, for the uplink that carries the accounts' updates to it. */
  systemCredsPath: string;
}

/** A site's name: it names a server, a folder and a JetStream domain, so letters, digits, '-' and '_' only. */
export const SITE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/;
/** Why a site's name cannot be used, or undefined. */
export const siteNameProblem = (site: string) =>
  !SITE_NAME.test(site) ? "a site's name is letters, digits, '-' and '_' (it names a server, a folder and a JetStream domain)" : site === HUB_DOMAIN ? `'${HUB_DOMAIN}' is the hub's own JetStream domain` : undefined;


/**
 * The configuration of a site's leaf node. It runs in operator mode over the same operator and
 * accounts as the hub, so a host's credentials are checked here exactly as at the hub and work
 * unchanged; its one uplink binds the mesh's account with the leaf's own credentials.
 *
 * It runs JetStream in its own domain, named after the site, so that a site cut from the hub keeps
 * working on what it holds: its copy of the declarations bucket (a mirror of the hub's, caught up after
 * a cut in the order the hub stored them) answers the hosts' reads, and its reports stream takes the
 * hosts' reports and acknowledges them, while the hub's reports stream sources them from it, in order
 * and once, whenever the uplink is up (`meshctl site SITE` makes these streams). Reports cross the
 * uplink only that way: a plain copy of each would otherwise reach the hub's stream as well. The site's
 * notices of puts are its own hosts' business and stay at the site too.
 *
 * A second uplink binds the system account, so that an account JWT meshctl pushes at the hub (a host's
 * user revoked) reaches the leaf's own full resolver as it reaches the hub's servers, and the leaf asks
 * the hub for what it missed while cut off.
 */
export function leafConfig(place: LeafPlace, accounts: PublicAccounts): string {
  return [
    `# nats-server of the site ${place.site}, a leaf node of the mesh, made by meshctl init --leaf`,
    `server_name: ${quoted(`leaf-${place.site}`)}`,
    `listen: ${quoted(`${urlHost(place.host)}:${place.port}`)}`,
    'jetstream {',
    `  store_dir: ${quoted(place.storeDir)}`,
    `  domain: ${quoted(place.site)}`,
    '}',
    'leafnodes {',
    '  # the uplink is tried again every second after a cut',
    '  reconnect: 1',
    '  remotes: [',
    '    {',
    `      urls: [${place.hubs.map(quoted).join(', ')}]`,
    `      credentials: ${quoted(place.credsPath)}`,
    `      account: ${quoted(accounts.account.publicKey)}`,
    `      deny_exports: [${[REPORTS_SUBJECTS, DECLARED_SUBJECTS, TRUST_NOTICE_SUBJECTS].map(quoted).join(', ')}]`,
    '    }',
    '    {',
    `      urls: [${place.hubs.map(quoted).join(', ')}]`,
    `      credentials: ${quoted(place.systemCredsPath)}`,
    `      account: ${quoted(accounts.system.publicKey)}`,
    '    }',
    '  ]',
    '}',
    ...operatorModeLines(accounts, place.resolverDir),
    '',
  ].join('\n');
}
