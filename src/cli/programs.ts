import { DEFAULT_CONFIG, DEFAULT_STATE_DIR } from '../system/layout.js';
import type { OptionSpec, ProgramSpec } from './args.js';

const options: Record<string, OptionSpec> = {
  json: { type: 'boolean', help: 'machine-readable output on stdout (logs go to stderr)' },
  'log-level': { type: 'string', value: 'LEVEL', help: 'fatal, error, warn, info, debug or trace (default info)' },
  'state-dir': { type: 'string', value: 'DIR', help: `the state directory (default ${DEFAULT_STATE_DIR})` },
  config: { type: 'string', value: 'FILE', help: `the configuration (default ${DEFAULT_CONFIG})` },
  root: { type: 'string', value: 'DIR', help: 'take every declared path inside DIR (a scratch tree)' },
  'dry-run': { type: 'boolean', help: 'print the plan and change nothing' },
  mode: { type: 'string', value: 'MODE', help: 'adopted or converged' },
  format: { type: 'string', value: 'FORMAT', help: 'mermaid, dot or json' },
  out: { type: 'string', value: 'DIR', help: 'where to write' },
  key: { type: 'string', value: 'FILE', help: 'the signing key (an operator nkey seed file)' },
  server: { type: 'string', value: 'URL', help: 'a NATS server (default nats://127.0.0.1:4222)' },
  creds: { type: 'string', value: 'FILE', help: 'a NATS credentials file (JWT and seed)' },
  nkey: { type: 'string', value: 'FILE', help: 'a file holding a NATS user nkey seed' },
  'tls-ca': { type: 'string', value: 'FILE', help: 'the CA that signed the servers\' certificates' },
  'tls-cert': { type: 'string', value: 'FILE', help: 'a client certificate, for servers that verify clients' },
  'tls-key': { type: 'string', value: 'FILE', help: 'the client certificate\'s key' },
  node: { type: 'string', value: 'NODE', help: 'a node id' },
  follow: { type: 'boolean', help: 'keep following' },
  bundle: { type: 'string', value: 'FILE', help: 'a genesis bundle to enrol with, if this machine is not enrolled' },
  diff: { type: 'boolean', help: 'show a unified diff of each file whose content changes (never of a sensitive one)' },
  'detailed-exitcodes': { type: 'boolean', help: '0 nothing changed, 2 changes applied (or planned), 4 failures, 6 both' },
  'last-report': { type: 'boolean', help: 'the newest report whole, every step (the mesh receives what changed and counts of the rest)' },
  epoch: { type: 'string', value: 'N', help: 'the epoch the declaration is sent in' },
  replicas: { type: 'string', value: 'N', help: 'copies the mesh keeps of declarations and reports (default: one a server, up to 3)' },
  offline: { type: 'boolean', help: 'make the bundle without writing the node\'s key (the first send must come after genesis)' },
  name: { type: 'string', value: 'NAME', help: 'the archive\'s name in the store (default: the file name)' },
  replace: { type: 'boolean', help: 'replace the key a node enrolled (a machine made anew)' },
  'node-key': { type: 'string', value: 'FILE', help: "the host's own key seed (SN…) to carry, made by meshctl node-key" },
  'embed-creds': { type: 'string', value: 'FILE', help: "the host's credentials file to carry (made by meshctl node-creds); genesis writes it 0600; --creds is then meshctl's own" },
  'account-key': { type: 'string', value: 'FILE', help: "the mesh's NATS account seed (SA…), or one of its signing keys" },
  account: { type: 'string', value: 'A…', help: 'the account the signing key belongs to (when it is not the account\'s own key)' },
  'no-start': { type: 'boolean', help: 'install, but neither enable nor start the service' },
  purge: { type: 'boolean', help: 'remove the state and the configuration too' },
  mesh: { type: 'string', value: 'DIR', help: 'the mesh directory made by meshctl init: its servers, credentials and keys are the defaults (or MESH_DIR)' },
  servers: { type: 'string', value: 'N', help: 'how many nats-servers: one, or a cluster of N with routes (default 1)' },
  host: { type: 'string', value: 'HOST', multiple: true, help: 'where the servers listen: one host for all, or one a server (default 127.0.0.1)' },
  port: { type: 'string', value: 'PORT', multiple: true, help: 'client port: the first server\'s (counted up on one host) or one a server (default 4222)' },
  label: { type: 'string', value: 'K=V', multiple: true, help: 'a label of the node (role=web); again for more' },
  nodes: { type: 'string', value: 'A,B…', multiple: true, help: 'these nodes' },
  select: { type: 'string', value: 'K=V,…', help: "the nodes whose labels match (k=v and k!=v, every term)" },
  all: { type: 'boolean', help: 'every node with a key in the mesh' },
  timeout: { type: 'string', value: 'DURATION', help: 'how long to wait for the hosts (10s, 500ms; default 10s)' },
  'cluster-port': { type: 'string', value: 'PORT', multiple: true, help: 'route port, as --port (default 6222)' },
};
const oneShot = ['dry-run', 'diff', 'detailed-exitcodes'];

const globals = ['json', 'log-level'];
const linkOptions = ['server', 'creds', 'nkey', 'tls-ca', 'tls-cert', 'tls-key'];
const hostGlobals = [...globals, 'state-dir', 'config', 'root'];

export const meshHostProgram: ProgramSpec = {
  name: 'mesh-host',
  summary: 'Converges this machine to the declaration the mesh sent, verifies it, keeps a record, reports.',
  options,
  globals: hostGlobals,
  commands: {
    inventory: { summary: 'capabilities with reason and method, and links', args: [], options: [] },
    apply: { summary: 'apply a declaration from a file (a machine the mesh has not spoken to)', args: ['FILE'], options: oneShot },
    status: { summary: 'mode, last applied, report sequence, footprint, held, last outcome', args: [], options: ['last-report'] },
    genesis: { summary: 'enrol this machine from a genesis bundle', args: ['BUNDLE'], options: ['mode', ...oneShot] },
    reconcile: { summary: 'apply what the mesh last said again', args: [], options: oneShot },
    run: { summary: 'the daemon: link, reconcile timer, worker, outbox (--bundle enrols an unenrolled machine)', args: [], options: ['bundle', 'mode'], logsToStdout: true },
    launch: { summary: 'what the service runs: the current release, and a release the mesh names on trial', args: [], options: [], logsToStdout: true },
    install: { summary: 'install this executable as a release, the service, and enable and start it (--bundle enrols)', args: [], options: ['dry-run', 'bundle', 'mode', 'no-start'] },
    uninstall: { summary: 'stop and remove the service and the releases (the state is kept unless --purge)', args: [], options: ['dry-run', 'purge'] },
    chart: { summary: 'the lifecycle machine, for review', args: [], options: ['format'] },
  },
};

export const meshctlProgram: ProgramSpec = {
  name: 'meshctl',
  summary: 'The control side of the mesh: keys, signing, genesis bundles, sending declarations, reading reports.',
  options,
  globals: [...globals, 'mesh'],
  commands: {
    init: { summary: 'a new mesh in DIR: operator, accounts, credentials, keys and nats-server configuration (operator mode)', args: ['DIR'], options: ['servers', 'host', 'port', 'cluster-port'] },
    keygen: { summary: 'make an operator key pair in DIR', args: [], options: ['out'] },
    sign: { summary: 'sign a declaration; prints the envelope', args: ['FILE'], options: ['key'] },
    bundle: { summary: 'make a genesis bundle', args: ['FILE'], options: ['key', 'node', 'epoch', 'offline', 'replicas', ...linkOptions, 'embed-creds', 'node-key', 'out'] },
    send: { summary: 'put a declaration into the mesh for NODE, or each its own copy for --nodes, --select or --all', args: ['NODE?', 'FILE'], options: ['nodes', 'select', 'all', 'key', 'epoch', 'replicas', ...linkOptions] },
    plan: { summary: 'ask each chosen host for the plan it would make for FILE, changing nothing; changes grouped across nodes', args: ['FILE'], options: ['nodes', 'select', 'all', 'diff', 'timeout', 'key', 'epoch', ...linkOptions] },
    'put-archive': { summary: 'upload an archive to the mesh\'s store; prints the resource to paste', args: ['FILE'], options: ['name', 'replicas', ...linkOptions] },
    'put-image': { summary: 'upload an image archive (docker save, podman save) to the mesh\'s store; prints the image field to paste', args: ['FILE'], options: ['name', 'replicas', ...linkOptions] },
    reports: { summary: 'read reports', args: [], options: ['follow', 'node', 'replicas', ...linkOptions] },
    status: { summary: 'the fleet, one line a node (exit 1 when any failed, is silent or has not reported); --select by labels; with NODE, ask that host', args: ['NODE?'], options: ['select', ...linkOptions] },
    'node-key': { summary: "make NODE's own key pair and pin its public key in the mesh (for bundle --node-key), with its labels", args: ['NODE'], options: ['out', 'replace', 'label', ...linkOptions] },
    label: { summary: "set a node's labels (k=v), or remove one (k-)", args: ['NODE', 'LABEL…'], options: linkOptions },
    'node-creds': { summary: "issue NODE's NATS credentials: its own key, subjects and read-only archives", args: ['NODE'], options: ['account-key', 'account', 'out'] },
  },
};
