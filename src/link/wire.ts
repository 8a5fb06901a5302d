/** The wire (docs/wire.md): any control plane can speak to a host through these names. */
export const DECLARATIONS_BUCKET = 'mesh_declarations';
export const REPORTS_STREAM = 'MESH_REPORTS';
export const reportSubject = (node: string) => `mesh.report.${node}`;
export const REPORTS_SUBJECTS = 'mesh.report.>';
/** The node a report subject is for. */
export const nodeOfReportSubject = (subject: string) => subject.slice(reportSubject('').length);
export const statusSubject = (node: string) => `mesh.node.${node}.status`;
export const inventorySubject = (node: string) => `mesh.node.${node}.inventory`;
/** Asks a host for the plan it would make for a signed declaration (changing nothing). */
export const planSubject = (node: string) => `mesh.node.${node}.plan`;
export const heartbeatSubject = (node: string) => `mesh.heartbeat.${node}`;
/** The message id a report is published with: the server stores a retry inside the duplicate window once. */
export const reportMessageId = (node: string, sequence: number) => `${node}-${sequence}`;
/** The last heartbeat of every node, kept by the server: the fleet view reads their ages without listening. */
export const HEARTBEATS_STREAM = 'MESH_HEARTBEATS';
export const HEARTBEAT_SUBJECTS = 'mesh.heartbeat.>';
/** The stream under a KV bucket, and the subject of one key in it. */
export const DECLARATIONS_STREAM = `KV_${DECLARATIONS_BUCKET}`;
export const DECLARATION_SUBJECTS = `$KV.${DECLARATIONS_BUCKET}.>`;
/**
 * Every put to a node's key, kept for as long as the operator chose (`--keep-history`): the server copies
 * each message of the declarations bucket into it (a source), so nothing a sender does can leave a
 * declaration out. Its messages keep their subject, the node's key's.
 */
export const HISTORY_STREAM = 'MESH_HISTORY';
/** The subject of one node's key: a put is stored by the stream and heard by whoever listens on it. */
export const declarationSubject = (node: string) => `$KV.${DECLARATIONS_BUCKET}.${node}`;
/**
 * A site's notice of a put to a node's key, published by its leaf node as the put reaches the site (a
 * put's own message stays on the hub's side of the uplink). Headers only: it names the revision, the
 * host reads the value.
 */
export const declaredSubject = (node: string) => `mesh.declared.${node}`;
export const DECLARED_SUBJECTS = 'mesh.declared.>';
/** The site's stream that makes those notices: the newest put of each key, taken from the hub's bucket as the site's copy is. */
export const SITE_NOTICES_STREAM = 'MESH_DECLARED';
/** The control side's record of each node's key (no host's credentials reach it). */
export const ENROLMENTS_BUCKET = 'mesh_enrolments';
/** The control side's record of each rollout, and which nodes an unfinished rollout holds (no host's credentials reach it). */
export const ROLLOUTS_BUCKET = 'mesh_rollouts';
/**
 * The JetStream domain of the mesh's own servers (the hub): a site's leaf node runs its own domain,
 * named after the site, and copies the hub's declarations from this one.
 */
export const HUB_DOMAIN = 'mesh';
/** Archives, in the JetStream Object Store: meshctl put-archive writes, hosts only read. */
export const ARCHIVES_BUCKET = 'mesh_archives';
/**
 * A host's replies come back under its own prefix, so its credentials can let it read its own replies
 * and nobody else's. The fixed `node` token keeps it apart from the random `_INBOX.<nuid>` of other clients.
 */
export const hostInboxPrefix = (node: string) => `_INBOX.node.${node}`;
/**
 * The mesh's trust root, every version of it: key `v<N>` holds version N's record, never replaced. The
 * control side writes a version once (create); a host reads the next one after its own by a direct get.
 */
export const TRUST_BUCKET = 'mesh_trust';
export const TRUST_STREAM = `KV_${TRUST_BUCKET}`;
export const trustKey = (version: number) => `v${version}`;
/** Every put of a version is heard here. */
export const TRUST_SUBJECTS = `$KV.${TRUST_BUCKET}.>`;
/**
 * At a site, the notice of a new version as it reaches the site (a put's own message stays at the hub):
 * `mesh.trusted.v<N>`, headers only, from the site's stream MESH_TRUSTED.
 */
export const TRUST_NOTICES_STREAM = 'MESH_TRUSTED';
export const TRUST_NOTICE_SUBJECTS = 'mesh.trusted.>';
/** The control side's proposals: declarations signed by fewer keys than the trust root needs, waiting for approval (no host reads it). */
export const PROPOSALS_BUCKET = 'mesh_proposals';
