import { nkeySeed, publicNkey, signEd25519, verifyEd25519 } from '../core/declaration/nkey.js';

/**
 * The header a host's report carries once the host has a new node key (`mesh-host rekey`): every
 * change of key it made, oldest first, base64 of their JSON list, each signed by the key it retired and
 * by the new one; a control side that holds any key of the chain walks it to the report's key.
 */
export const REKEY_HEADER = 'Mesh-Rekey';

/**
 * A host's change of node key: from the key the mesh holds for it to a new one, made at `at`, after its
 * report `afterReport` (that report and those before it were signed by `from`; every later one by `to`).
 */
export interface Rekey {
  node: string;
  from: string;
  to: string;
  at: string;
  afterReport: number;
}

/** The statement as it travels: the change and both keys' signatures (base64) over its bytes. */
export interface SignedRekey {
  rekey: Rekey;
  fromSignature: string;
  toSignature: string;
}

/** The bytes both keys sign: the statement's JSON with its fields in this order, and nothing else. */
export function rekeyBytes(r: Rekey): Buffer {
  return Buffer.from(JSON.stringify({ node: r.node, from: r.from, to: r.to, at: r.at, afterReport: r.afterReport }));
}

/** The statement of a change from the seed `from` to the seed `to`, signed by both. */
export function signRekey(node: string, fromSeed: string, toSeed: string, at: string, afterReport: number): SignedRekey {
  const from = nkeySeed(fromSeed, 'node');
  const to = nkeySeed(toSeed, 'node');
  if (typeof from === 'string' || typeof to === 'string') throw new Error(`a node key: ${typeof from === 'string' ? from : to}`);
  const rekey: Rekey = { node, from: from.publicKey, to: to.publicKey, at, afterReport };
  const bytes = rekeyBytes(rekey);
  return { rekey, fromSignature: signEd25519(from.privateKey, bytes).toString('base64'), toSignature: signEd25519(to.privateKey, bytes).toString('base64') };
}

/** The header's value for a chain of changes. */
export const rekeyHeader = (chain: SignedRekey[]) => Buffer.from(JSON.stringify(chain)).toString('base64');

/**
 * The changes a report's header states, when they hold: for this node, from the key the mesh holds
 * (`enrolled`), one after the other, to the key the report is signed by, each signed by both its keys.
 * Why not, otherwise.
 */
export function checkRekeyChain(header: string, node: string, enrolled: string, reportKey: string): Rekey[] | string {
  let chain: unknown;
  try {
    chain = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    return 'its rekey header is not JSON';
  }
  if (!Array.isArray(chain)) return 'its rekey header is not a list of signed statements';
  const start = chain.findIndex((s: SignedRekey) => s?.rekey?.from === enrolled);
  if (start < 0) return `no change of key in its rekey header starts from the key the mesh holds (${enrolled})`;
  const walked: Rekey[] = [];
  let holds = enrolled;
  for (const signed of chain.slice(start) as SignedRekey[]) {
    const step = checkRekey(signed, node, holds);
    if (typeof step === 'string') return step;
    walked.push(step);
    holds = step.to;
    if (holds === reportKey) return walked;
  }
  return `its rekey header does not end at the key the report is signed by (${reportKey})`;
}

/** One change of key, when it holds: for this node, from `from`, signed by both its keys. */
function checkRekey(signed: SignedRekey, node: string, from: string): Rekey | string {
  const r = signed?.rekey;
  if (typeof r !== 'object' || r === null || typeof r.at !== 'string' || typeof r.afterReport !== 'number' || typeof signed.fromSignature !== 'string' || typeof signed.toSignature !== 'string') return 'its rekey header is not a signed statement';
  if (r.node !== node) return `its rekey statement is for ${String(r.node)}`;
  if (r.from !== from) return `its rekey statement is from ${String(r.from)}, not from ${from}`;
  const bytes = rekeyBytes(r);
  for (const [key, signature, which] of [[r.from, signed.fromSignature, 'the retired key'], [r.to, signed.toSignature, 'the new key']] as const) {
    const pub = publicNkey(key, 'node');
    if (typeof pub === 'string') return `its rekey statement names ${which} ${key}: ${pub}`;
    if (!verifyEd25519(pub, bytes, Buffer.from(signature, 'base64'))) return `its rekey statement is not signed by ${which}`;
  }
  return r;
}
