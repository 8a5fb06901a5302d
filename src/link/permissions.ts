import { domainApi } from './site.js';
import { ARCHIVES_BUCKET, DECLARATIONS_BUCKET, HUB_DOMAIN, TRUST_BUCKET, TRUST_NOTICE_SUBJECTS, TRUST_STREAM, declarationSubject, declaredSubject, heartbeatSubject, hostInboxPrefix, inventorySubject, planSubject, reportSubject, statusSubject } from './wire.js';

/** One subject a host's credentials allow, and why the host needs it. */
export interface Grant {
  /** `publish`: the host may send on it; `subscribe`: the host may receive on it. */
  direction: 'publish' | 'subscribe';
  subject: string;
  why: string;
}

const api = '$JS.API';
const kvStream = `KV_${DECLARATIONS_BUCKET}`;
const objStream = `OBJ_${ARCHIVES_BUCKET}`;
/** The hub's JetStream, as a host of a site reaches it through its leaf node (the uplink up). */
const hubApi = domainApi(HUB_DOMAIN);

/**
 * Everything a host's credentials allow, and nothing else: the one place the permission set comes
 * from (`meshctl node-creds` writes it into the user JWT; docs/wire.md is checked against it). Each
 * subject was found by running the host's own client calls against a server in operator mode.
 */
export function hostGrants(node: string): Grant[] {
  const key = declarationSubject(node);
  return [
    { direction: 'publish', subject: `${api}.DIRECT.GET.${kvStream}.${key}`, why: 'reads its own key (a direct get that names the key in the subject, so no other key can be asked for): when a put is heard, on start, on every reconnect and on the timer' },
    { direction: 'publish', subject: `${api}.DIRECT.GET.${TRUST_STREAM}.$KV.${TRUST_BUCKET}.*`, why: "reads the mesh's trust root, one version at a time (a direct get that names the version's key): the next version after the one it holds, on start, when a put is heard and on the timer" },
    { direction: 'publish', subject: reportSubject(node), why: 'publishes its reports into the stream' },
    { direction: 'publish', subject: heartbeatSubject(node), why: 'publishes its heartbeat' },
    { direction: 'publish', subject: `${api}.INFO`, why: 'the object store client asks whether JetStream is there before it opens the archives bucket (account totals, no names)' },
    { direction: 'publish', subject: `${api}.STREAM.INFO.${objStream}`, why: 'opens the archives bucket (its settings)' },
    { direction: 'publish', subject: `${api}.STREAM.MSG.GET.${objStream}`, why: "reads an archive's description (name, size, digest, chunk subject): archives are the fleet's, readable by every host" },
    { direction: 'publish', subject: `${api}.CONSUMER.CREATE.${objStream}.*.$O.${ARCHIVES_BUCKET}.C.*`, why: "reads an archive's chunks: an ordered consumer filtered on one object's chunk subject" },
    { direction: 'publish', subject: `${hubApi}.INFO`, why: "at a site, the same before it opens the hub's archives bucket through the leaf node, to read an archive the site's copy lacks parts of" },
    { direction: 'publish', subject: `${hubApi}.STREAM.INFO.${objStream}`, why: "at a site, opens the hub's archives bucket through the leaf node (an archive the site's copy lacks parts of)" },
    { direction: 'publish', subject: `${hubApi}.STREAM.MSG.GET.${objStream}`, why: "at a site, reads at the hub the description of an archive the site's copy lacks parts of" },
    { direction: 'publish', subject: `${hubApi}.CONSUMER.CREATE.${objStream}.*.$O.${ARCHIVES_BUCKET}.C.*`, why: "at a site, reads at the hub the chunks of an archive the site's copy lacks parts of" },
    { direction: 'subscribe', subject: key, why: 'hears every put to its own key (the value as published, read back with its revision by a direct get); no consumer on the server' },
    { direction: 'subscribe', subject: `$KV.${TRUST_BUCKET}.*`, why: 'hears every new version of the trust root as it is put (the value is read back by a direct get)' },
    { direction: 'subscribe', subject: TRUST_NOTICE_SUBJECTS.replace('>', '*'), why: "hears its site's notice of a new version of the trust root as it reaches the site (behind a leaf node the put's own message stays at the hub); headers only" },
    { direction: 'subscribe', subject: declaredSubject(node), why: "hears its site's notice of a put to its own key as the put reaches the site (behind a leaf node the put's own message stays at the hub); headers only" },
    { direction: 'subscribe', subject: `${hostInboxPrefix(node)}.>`, why: "its own replies: acknowledgements of its reports, answers of the JetStream API, the archive fetch's deliveries (it connects with this inbox prefix, so it cannot read another host's)" },
    { direction: 'subscribe', subject: statusSubject(node), why: 'answers status requests' },
    { direction: 'subscribe', subject: inventorySubject(node), why: 'answers inventory requests' },
    { direction: 'subscribe', subject: planSubject(node), why: 'answers plan requests: the plan it would make for a signed declaration, changing nothing' },
  ];
}

/**
 * Answers: the host may publish once to the reply subject of each request it received, within this
 * time (the server forgets the permission after it); a slow inventory answers within it.
 */
export const RESPONSE_GRANT = { max: 1, ttlMs: 2 * 60_000 } as const;

/** The permissions of a user JWT (NATS's claim shape) for this node. */
export function hostPermissions(node: string): { pub: { allow: string[] }; sub: { allow: string[] }; resp: { max: number; ttl: number } } {
  const grants = hostGrants(node);
  const subjects = (direction: Grant['direction']) => grants.filter((g) => g.direction === direction).map((g) => g.subject);
  // The JWT's response time is a Go duration: nanoseconds.
  return { pub: { allow: subjects('publish') }, sub: { allow: subjects('subscribe') }, resp: { max: RESPONSE_GRANT.max, ttl: RESPONSE_GRANT.ttlMs * 1_000_000 } };
}

/**
 * Why a credentials file should not go to this node, or undefined: issued for another node (its
 * permissions name another node's report subject), or allowing everything (no permissions at all).
 */
export function credsProblem(text: string, node: string): string | undefined {
  const token = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*-+END NATS USER JWT-+/.exec(text)?.[1];
  let claims: { nats?: { pub?: { allow?: string[] } } };
  try {
    claims = JSON.parse(Buffer.from(token!.split('.')[1]!, 'base64url').toString('utf8')) as typeof claims;
  } catch {
    return 'not a NATS credentials file (user JWT and seed)';
  }
  const allowed = claims.nats?.pub?.allow;
  if (!allowed?.length) return 'its user may publish anywhere: issue the host its own with meshctl node-creds';
  if (!allowed.includes(reportSubject(node))) return `its user may not publish ${reportSubject(node)}: issued for another node`;
  return undefined;
}
