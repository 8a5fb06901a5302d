import { nkeySeed, publicNkey, signEd25519, verifyEd25519 } from '../core/declaration/nkey.js';
import { isCurveKey } from '../core/declaration/sealed.js';

/**
 * The headers every report of a host carries besides its signature: its curve key (X…), to which the
 * control side seals its secrets, and the host's node key's signature over that key's statement. The
 * control side records both with the node's enrolled key, and seals only to a curve key whose statement
 * holds under it.
 */
export const SEALING_KEY_HEADER = 'Mesh-Sealing-Key';
export const SEALING_SIGNATURE_HEADER = 'Mesh-Sealing-Signature';

/** A host's curve key, signed by its node key. */
export interface SealingClaim {
  key: string;
  /** Ed25519 (base64) by the node key over sealingStatement(key). */
  signature: string;
}

/** What the node key signs: the curve key with a context of its own, so no other signature of the node's can pass for it. */
export const sealingStatement = (curveKey: string) => Buffer.from(`mesh-host sealing key v1\n${curveKey}`, 'utf8');

/** The node seed's signature over its host's curve key; a reason when the seed is not one. */
export function signSealingKey(nodeSeed: string, curveKey: string): SealingClaim | string {
  const pair = nkeySeed(nodeSeed, 'node');
  if (typeof pair === 'string') return pair;
  return { key: curveKey, signature: signEd25519(pair.privateKey, sealingStatement(curveKey)).toString('base64') };
}

/** Whether a claim holds under a node's public key (N…): a curve key, signed by that node. */
export function sealingClaimHolds(claim: SealingClaim, nodeKey: string): boolean {
  if (!isCurveKey(claim.key)) return false;
  const key = publicNkey(nodeKey, 'node');
  return typeof key !== 'string' && verifyEd25519(key, sealingStatement(claim.key), Buffer.from(claim.signature, 'base64'));
}

/** The claim a report's headers carry, when they carry one. */
export function sealingClaimOf(headers: { get(name: string): string } | undefined): SealingClaim | undefined {
  const key = headers?.get(SEALING_KEY_HEADER);
  const signature = headers?.get(SEALING_SIGNATURE_HEADER);
  return key && signature ? { key, signature } : undefined;
}
