import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { reportSigner, type ReportSigner } from '../../link/report-trust.js';
import { REKEY_HEADER, rekeyHeader, type SignedRekey } from '../../link/rekey.js';
import { SEALING_KEY_HEADER, SEALING_SIGNATURE_HEADER, signSealingKey, type SealingClaim } from '../../link/sealing-trust.js';
import { ensureHostKey, HOST_KEY_FILE } from '../../engine/report/host-key.js';
import { ensureSealingKey } from '../../engine/report/sealing-key.js';
import type { Logger } from '../../core/system/log.js';

/** Beside the host's key: every change of its key (`mesh-host rekey`), oldest first, each signed by the old key and the new. */
export const REKEY_FILE = 'node-rekey.json';

/**
 * The host's own key signs its reports; one enrolled before keys existed makes its key now. The key
 * file is looked at again before each report (a stat): after `mesh-host rekey` the running daemon signs
 * with the new key from its next report, and carries the statement of the change with every report the
 * new key signs, so whichever control-side reader sees one first records the new key. Each report also
 * carries the host's curve key, signed by the node key, so that the control side records it with the
 * node's and seals secrets to it: a host enrolled before curve keys makes one now.
 */
export function hostSigner(stateDir: string, log: Logger): ReportSigner {
  const key = ensureHostKey(stateDir);
  if (key.made) log.warn({ key: key.publicKey }, 'this host had no key of its own: one is made now; its next report enrols it');
  const curve = ensureSealingKey(stateDir);
  if (curve.made) log.warn({ curveKey: curve.publicKey }, 'this host had no curve key: one is made now; its next report records it, and secrets are sealed to it from then on');
  const load = () => loadKey(stateDir, curve.publicKey);
  let current = load();
  let stamp = keyStamp(stateDir);
  const fresh = () => {
    const now = keyStamp(stateDir);
    if (now === stamp) return current;
    try {
      current = load();
      stamp = now;
      log.info({ key: current.signer.publicKey, rekeyed: current.rekey !== undefined }, 'the host key changed: reports are signed with the new one from here on');
    } catch (err) {
      log.error({ err: (err as Error).message }, 'the host key changed but cannot be read: reports are still signed with the one before');
    }
    return current;
  };
  return {
    get publicKey() {
      return fresh().signer.publicKey;
    },
    headersFor(bytes) {
      const { signer, rekey, sealing } = fresh();
      return { ...signer.headersFor(bytes), [SEALING_KEY_HEADER]: sealing.key, [SEALING_SIGNATURE_HEADER]: sealing.signature, ...(rekey ? { [REKEY_HEADER]: rekey } : {}) };
    },
    get sealing() {
      return fresh().sealing;
    },
  };
}

/** The key as kept, its claim of the host's curve key, and the header of the statement that handed over to it (none when it was never changed). */
function loadKey(stateDir: string, curveKey: string): { signer: ReportSigner; sealing: SealingClaim; rekey?: string } {
  const seed = readFileSync(join(stateDir, HOST_KEY_FILE), 'utf8').trim();
  const signer = reportSigner(seed);
  if (typeof signer === 'string') throw new Error(`the host key: ${signer}`);
  const sealing = signSealingKey(seed, curveKey);
  if (typeof sealing === 'string') throw new Error(`the host key: ${sealing}`);
  const chain = readRekeyChain(stateDir);
  return { signer, sealing, ...(chain.at(-1)?.rekey.to === signer.publicKey ? { rekey: rekeyHeader(chain) } : {}) };
}

/** The host's changes of key as kept; none when it never changed it. */
export function readRekeyChain(stateDir: string): SignedRekey[] {
  try {
    const chain = JSON.parse(readFileSync(join(stateDir, REKEY_FILE), 'utf8')) as unknown;
    return Array.isArray(chain) ? (chain as SignedRekey[]) : [];
  } catch {
    return [];
  }
}

function keyStamp(stateDir: string): string {
  try {
    const st = statSync(join(stateDir, HOST_KEY_FILE));
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'missing';
  }
}
