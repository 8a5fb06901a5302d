import { reportSigner, type ReportSigner } from '../link/report-trust.js';
import { ensureHostKey } from '../report/host-key.js';
import type { Logger } from '../system/log.js';

/** The host's own key signs its reports; one enrolled before keys existed makes its key now. */
export function hostSigner(stateDir: string, log: Logger): ReportSigner {
  const key = ensureHostKey(stateDir);
  if (key.made) log.warn({ key: key.publicKey }, 'this host had no key of its own: one is made now; its next report enrols it');
  const signer = reportSigner(key.seed);
  if (typeof signer === 'string') throw new Error(`the host key: ${signer}`);
  return signer;
}
