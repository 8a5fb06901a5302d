import type { NatsConnection } from '@nats-io/transport-node';
import { Enrolments } from '../../link/enrolment.js';
import { signedReportOf } from '../../link/signed-report.js';
import { beginReportCheck, REPORT_SIGNATURE_HEADER, verifyReport } from '../../link/report-trust.js';
import type { SignatureVerdict } from './fleet.js';
import type { ReportVerifier } from './fleet-read.js';

/**
 * The fleet view's check of each node's newest report: its signature against the key its node enrolled
 * (the same check as `meshctl reports`). Forged, signed by another key or naming another node: failed.
 * Unsigned, or signed by a node that enrolled no key yet: unverified, said but not failed.
 */
export function fleetReportVerifier(enrolments: Promise<Enrolments>): ReportVerifier {
  return async (node, message) => {
    const signed = signedReportOf(node, message.bytes, message.headers);
    if (!message.headers?.get(REPORT_SIGNATURE_HEADER)) return verdictOf(verifyReport(signed, undefined));
    // Begun before the enrolments are in: the signature is checked while they (and the rest) are read.
    const begun = beginReportCheck(signed);
    return verdictOf(await (await enrolments).check(signed, begun));
  };
}

/**
 * Every node's enrolment in one read, begun at once: it runs while the reports are read, not after them.
 * A fleet of unsigned reports never waits for it; its failure is said by whoever awaits it.
 */
export function readEnrolments(nc: NatsConnection): Promise<Enrolments> {
  const enrolments = Enrolments.open(nc).then(async (opened) => {
    await opened.readAll();
    return opened;
  });
  enrolments.catch(() => {});
  return enrolments;
}

function verdictOf(trust: ReturnType<typeof verifyReport>): SignatureVerdict {
  switch (trust.verdict) {
    case 'verified':
      return { verdict: 'verified' };
    case 'unsigned':
      return { verdict: 'unverified', reason: 'it is not signed' };
    case 'not-enrolled':
      return { verdict: 'unverified', reason: `signed by ${trust.key}, but its node has enrolled no key` };
    case 'bad-signature':
      return { verdict: 'failed', reason: trust.reason };
    case 'unknown-key':
      return { verdict: 'failed', reason: `signed by ${trust.key}, not by the key its node enrolled (${trust.enrolled})` };
    case 'retired-key':
      return { verdict: 'failed', reason: `signed by ${trust.key}, a key its node retired at ${trust.retiredAt} (after its report ${trust.afterReport})` };
    case 'wrong-node':
      return { verdict: 'failed', reason: `it names ${trust.named ?? 'no node'}, not the node of its subject` };
  }
}
