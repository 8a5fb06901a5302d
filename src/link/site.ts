import type { NatsConnection } from '@nats-io/transport-node';
import type { StreamConfig } from '@nats-io/jetstream';
import { lazy } from '../core/system/interop.js';
import { ARCHIVES_BUCKET, DECLARATION_SUBJECTS, DECLARATIONS_STREAM, DECLARED_SUBJECTS, REPORTS_STREAM, REPORTS_SUBJECTS, SITE_NOTICES_STREAM, TRUST_NOTICE_SUBJECTS, TRUST_NOTICES_STREAM, TRUST_STREAM, TRUST_SUBJECTS } from './wire.js';

/** The JetStream API of a domain, as a mirror or a source names it. */
export const domainApi = (domain: string) => `$JS.${domain}.API`;

/** How long a site keeps a report the hub has sourced already: the hub holds the record; this is the store and forward. */
const SITE_REPORTS_MAX_AGE_NS = 30 * 24 * 3600 * 1e9;
/** Inside it a report sent again (a host retrying after a lost acknowledgement) is stored once. */
const DUPLICATE_WINDOW_NS = 2 * 60 * 1e9;

/** What `ensureSite` found and made: each part said once. */
export interface SiteSetUp {
  created: string[];
  present: string[];
}

/**
 * The streams that let a site behind its own leaf node work through a cut of its uplink, made through
 * the hub (the leaf's domain is reached across the uplink, so the leaf must be connected):
 *
 * - on the leaf, a mirror of the hub's declarations bucket under the bucket's own stream name: a host
 *   of the site reads its key there with the same direct get as at the hub, during a cut too; after a
 *   cut the mirror catches up in the hub's order, so a host reads the newest value, never an older one;
 * - on the leaf, the notices of puts: a stream that takes each put from the hub's bucket as the site's
 *   copy does (one kept a key) and announces it, headers only, on the node's `mesh.declared.NODE`. A
 *   put's own message never crosses the uplink (a leaf node in its own JetStream domain keeps `$KV.>`
 *   on its side), so without it a site's host would hear of a put only at its next timed read; this way
 *   it hears within milliseconds, and after a cut, of each put caught up. It takes the hub's bucket
 *   itself rather than the site's copy: taken from the copy, it stopped after a cut and never caught
 *   up (nats-server 2.9.10), so a notice can come just before the copy has the put, and the host reads
 *   again until it does. It takes no publish of its own (no acknowledgement: a put made at the leaf by
 *   mistake fails);
 * - on the leaf, a mirror of the hub's trust root (every version, under the bucket's own stream name),
 *   and its notices: each version as it reaches the site announced, headers only, on `mesh.trusted.vN`,
 *   so that a site's host follows a rotation made at the hub as a host at the hub does, during a cut
 *   on what the site holds, and reads again until the copy holds the version a notice announced;
 * - on the leaf, a mirror of the archive store, so that archives a site's hosts fetch come from the site;
 * - on the leaf, a reports stream that acknowledges the site's reports, so a host's outbox empties
 *   during a cut, and that the hub's reports stream sources, in the order stored and each once, from
 *   the point it reached whenever the uplink comes back.
 *
 * Running it again changes nothing that is there, but lets a copy made before take rollups.
 */
export async function ensureSite(nc: NatsConnection, site: string, hubDomain: string): Promise<SiteSetUp> {
  const { jetstreamManager } = await lazy(import('@nats-io/jetstream'));
  const [hub, leaf] = await Promise.all([jetstreamManager(nc), jetstreamManager(nc, { domain: site, timeout: 10_000 })]);
  const created: string[] = [];
  const present: string[] = [];
  const fromHub = (name: string) => ({ name, external: { api: domainApi(hubDomain), deliver: '' } });
  const leafParts: Array<{ what: string; config: Partial<StreamConfig> & { name: string } }> = [
    // The copies take every message the hub's streams hold, rollups too: an object's description and a
    // purge of a key are stored with one, and a copy refusing it stops there and follows no further.
    { what: `the site's copy of ${DECLARATIONS_STREAM}`, config: { name: DECLARATIONS_STREAM, mirror: fromHub(DECLARATIONS_STREAM), allow_direct: true, max_msgs_per_subject: 1, allow_rollup_hdrs: true } },
    {
      what: `the site's notices of puts (${SITE_NOTICES_STREAM})`,
      config: { name: SITE_NOTICES_STREAM, subjects: [DECLARATION_SUBJECTS], sources: [fromHub(DECLARATIONS_STREAM)], max_msgs_per_subject: 1, allow_rollup_hdrs: true, no_ack: true, republish: { src: DECLARATION_SUBJECTS, dest: DECLARED_SUBJECTS, headers_only: true } },
    },
    { what: `the site's copy of ${TRUST_STREAM}`, config: { name: TRUST_STREAM, mirror: fromHub(TRUST_STREAM), allow_direct: true } },
    {
      what: `the site's notices of trust versions (${TRUST_NOTICES_STREAM})`,
      config: { name: TRUST_NOTICES_STREAM, subjects: [TRUST_SUBJECTS], sources: [fromHub(TRUST_STREAM)], max_msgs_per_subject: 1, no_ack: true, republish: { src: TRUST_SUBJECTS, dest: TRUST_NOTICE_SUBJECTS, headers_only: true } },
    },
    { what: `the site's copy of OBJ_${ARCHIVES_BUCKET}`, config: { name: `OBJ_${ARCHIVES_BUCKET}`, mirror: fromHub(`OBJ_${ARCHIVES_BUCKET}`), allow_direct: true, allow_rollup_hdrs: true } },
    { what: `the site's ${REPORTS_STREAM}`, config: { name: REPORTS_STREAM, subjects: [REPORTS_SUBJECTS], duplicate_window: DUPLICATE_WINDOW_NS, max_age: SITE_REPORTS_MAX_AGE_NS } },
  ];
  for (const part of leafParts) {
    const there = await leaf.streams.info(part.config.name).catch(() => undefined);
    if (there && part.config.allow_rollup_hdrs && !there.config.allow_rollup_hdrs) {
      // Made before the copies took rollups: set so, and the copy follows again from where it stopped.
      await leaf.streams.update(part.config.name, { ...there.config, allow_rollup_hdrs: true });
      created.push(`${part.what}: takes rollups now`);
    } else if (there) present.push(part.what);
    else {
      await leaf.streams.add(part.config);
      created.push(part.what);
    }
  }
  const reports = await hub.streams.info(REPORTS_STREAM);
  const sources = reports.config.sources ?? [];
  const api = domainApi(site);
  if (sources.some((s) => s.name === REPORTS_STREAM && s.external?.api === api)) present.push(`the hub's source of the site's reports`);
  else {
    await hub.streams.update(REPORTS_STREAM, { ...reports.config, sources: [...sources, { name: REPORTS_STREAM, external: { api, deliver: '' } }] });
    created.push(`the hub's source of the site's reports`);
  }
  return { created, present };
}
