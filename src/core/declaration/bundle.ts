import { parseJsonText } from './json-syntax.js';
import { refused } from '../system/errors.js';
import type { LinkAuth } from '../config/link-auth.js';
import { isEnvelope, type Envelope } from './envelope.js';
import { MAX_DECLARATION_BYTES, receiveDeclaration, type Received } from './load.js';
import { NODE_ID_PATTERN } from './ids.js';
import { nkeySeed } from './nkey.js';
import { curvePublicKey } from './sealed.js';
import { openTrustRecord, selfSignedProblem, signerRule, type TrustRecord, type TrustRoot } from './trust-root.js';

/** What enrols a machine: its node id, link settings, the control plane's key, a signed first declaration. */
export interface GenesisBundle {
  version: 1;
  node: string;
  link: { servers: string[] } & LinkAuth;
  /** The control plane's operator public key (O…): pinned by genesis. */
  publicKey: string;
  declaration: Envelope;
  /**
   * The mesh's trust root as the control side held it when the bundle was made (its newest version):
   * genesis pins it, and the host follows every version after it. A bundle without one pins `publicKey`
   * alone, as bundles made before trust roots did.
   */
  trust?: TrustRecord;
  /** The revision of the node's key that holds this declaration, when the control side put it there. */
  keyRevision?: number;
  /**
   * Secrets the operator chose to carry (the bundle is then a secret itself): the host's NATS
   * credentials file, which genesis writes 0600 as the host's own, and the host's own key seed
   * (SN…), pinned in the mesh when it was made, with its curve key's seed (SX…), recorded beside it.
   */
  secrets?: { creds?: string; nodeKey?: string; sealingKey?: string };
}

/** Reads a bundle and opens its declaration with the key it carries; refuses anything else whole. */
export async function openBundle(bytes: Buffer, source: string): Promise<{ bundle: GenesisBundle; received: Received }> {
  if (bytes.length > MAX_DECLARATION_BYTES) throw refused(`${source}: ${bytes.length} bytes is over the bound; not parsed`);
  const json = parseJsonText(bytes.toString('utf8'));
  if (!json.ok) throw refused(`${source}: not JSON: ${json.message}`);
  const value = json.value;
  const problems: string[] = [];
  const b = value as Partial<GenesisBundle>;
  if (typeof value !== 'object' || value === null) problems.push('/: a bundle is a JSON object');
  else {
    const allowed = new Set(['version', 'node', 'link', 'publicKey', 'declaration', 'trust', 'keyRevision', 'secrets']);
    for (const key of Object.keys(value)) if (!allowed.has(key)) problems.push(`/${key}: unknown field`);
    if (b.version !== 1) problems.push(`/version: unknown bundle version ${JSON.stringify(b.version)}`);
    if (typeof b.node !== 'string' || !new RegExp(NODE_ID_PATTERN).test(b.node)) problems.push('/node: not a node id ([A-Za-z0-9_-]{1,64})');
    if (typeof b.publicKey !== 'string' || !/^O[A-Z2-7]{55}$/.test(b.publicKey)) problems.push('/publicKey: not an operator public key (O…)');
    if (typeof b.link !== 'object' || b.link === null || !Array.isArray(b.link.servers) || !b.link.servers.every((s) => typeof s === 'string')) {
      problems.push('/link/servers: a list of server URLs');
    } else problems.push(...linkProblems(b.link));
    if (b.secrets !== undefined) problems.push(...secretsProblems(b.secrets));
    if (b.keyRevision !== undefined && (!Number.isInteger(b.keyRevision) || b.keyRevision < 1)) problems.push('/keyRevision: a revision (a whole number, at least 1)');
    if (!isEnvelope(b.declaration)) problems.push('/declaration: a signed envelope {payload, key, signature} or {payload, signatures}');
    if (b.trust !== undefined) problems.push(...trustProblems(b.trust, b.publicKey));
  }
  if (problems.length) throw refused(`${source}: bundle refused; nothing was touched`, problems);
  const bundle = value as GenesisBundle;
  const received = await receiveDeclaration(Buffer.from(JSON.stringify(bundle.declaration)), {
    source: `${source} (its declaration)`,
    ...(bundle.trust ? { rule: signerRule([rootOf(bundle.trust)]) } : { pinnedKey: bundle.publicKey }),
    node: bundle.node,
    requireSignature: true,
  });
  return { bundle, received };
}

/** The root of a record checked already. */
function rootOf(record: TrustRecord): TrustRoot {
  const opened = openTrustRecord(record);
  if (!opened.ok) throw new Error(opened.reason);
  return opened.opened.root;
}

/** The carried trust root: a record that opens, signed by its own control keys' threshold, naming the bundle's key. */
function trustProblems(trust: unknown, publicKey: unknown): string[] {
  const opened = openTrustRecord(trust);
  if (!opened.ok) return [`/trust${opened.reason}`];
  const problem = selfSignedProblem(opened.opened);
  if (problem) return [`/trust: ${problem}`];
  if (typeof publicKey === 'string' && !opened.opened.root.control.keys.includes(publicKey)) return [`/publicKey: ${publicKey} is not a control key of the trust root carried (version ${opened.opened.root.version})`];
  return [];
}

/** Carried secrets: a credentials file's text and a node seed; anything else is refused, named. */
function secretsProblems(secrets: unknown): string[] {
  if (typeof secrets !== 'object' || secrets === null || Array.isArray(secrets)) return ['/secrets: an object {creds, nodeKey, sealingKey}'];
  const problems: string[] = [];
  for (const [key, value] of Object.entries(secrets)) {
    if (key === 'creds') {
      if (typeof value !== 'string' || !value.includes('BEGIN NATS USER JWT') || !value.includes('BEGIN USER NKEY SEED')) problems.push('/secrets/creds: the text of a NATS credentials file (user JWT and seed)');
    } else if (key === 'nodeKey') {
      const pair = typeof value === 'string' ? nkeySeed(value, 'node') : 'not a string';
      if (typeof pair === 'string') problems.push(`/secrets/nodeKey: ${pair}`);
    } else if (key === 'sealingKey') {
      if (typeof value !== 'string' || curvePublicKey(value) === undefined) problems.push('/secrets/sealingKey: not a curve seed (SX…)');
    } else problems.push(`/secrets/${key}: unknown field`);
  }
  return problems;
}

/** The link's credentials are paths on the host; anything else there is refused, named. */
function linkProblems(given: object): string[] {
  const link = given as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(link)) if (!['servers', 'creds', 'nkeySeed', 'tls'].includes(key)) problems.push(`/link/${key}: unknown field`);
  for (const key of ['creds', 'nkeySeed'] as const) if (link[key] !== undefined && typeof link[key] !== 'string') problems.push(`/link/${key}: a path`);
  const tls = link.tls;
  if (tls !== undefined) {
    if (typeof tls !== 'object' || tls === null) problems.push('/link/tls: an object {ca, cert, key} of paths');
    else for (const [key, value] of Object.entries(tls)) {
      if (!['ca', 'cert', 'key'].includes(key)) problems.push(`/link/tls/${key}: unknown field`);
      else if (typeof value !== 'string') problems.push(`/link/tls/${key}: a path`);
    }
  }
  return problems;
}
