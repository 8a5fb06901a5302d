import { REKEY_HEADER } from './rekey.js';
import { REPORT_KEY_HEADER, REPORT_SIGNATURE_HEADER, verifyReport, type ReportTrust, type SignedReport } from './report-trust.js';

/** A node key retired by a rekey the retired key itself signed. */
export interface RetiredKey {
  key: string;
  at: string;
  afterReport: number;
  /** The new key it handed over to. */
  to: string;
}

/** A report signed by a retired key: verified when it was made before the key was retired, flagged after. */
export function retiredTrust(report: SignedReport, retired: RetiredKey): ReportTrust {
  const sequence = reportSequenceOf(report.bytes).reportSequence;
  if (sequence !== undefined && sequence <= retired.afterReport) return verifyReport(report, retired.key);
  return { verdict: 'retired-key', key: retired.key, retiredAt: retired.at, afterReport: retired.afterReport };
}

export function reportSequenceOf(bytes: Uint8Array): { reportSequence?: number } {
  try {
    const sequence = (JSON.parse(Buffer.from(bytes).toString('utf8')) as { sequence?: unknown }).sequence;
    return typeof sequence === 'number' ? { reportSequence: sequence } : {};
  } catch {
    return {};
  }
}

/** The signature headers of a message as it came (a report read from the stream). */
export function signedReportOf(node: string, bytes: Uint8Array, headers: { get(name: string): string } | undefined): SignedReport {
  return { node, bytes, key: headers?.get(REPORT_KEY_HEADER) || undefined, signature: headers?.get(REPORT_SIGNATURE_HEADER) || undefined, rekey: headers?.get(REKEY_HEADER) || undefined };
}
