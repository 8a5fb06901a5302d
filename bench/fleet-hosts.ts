/**
 * Simulated hosts for the fleet benchmark, many in one process: each has the real link session (its
 * own connection, listening on its key, answering requests) and answers plan requests with the real
 * host-side plan: the request checked as a delivery (signature against the operator's key, node,
 * vocabulary), then the apply path's dry run against its own store and scratch root, which hold one
 * file as a host's would after its first apply.
 *
 * argv: servers (comma-separated), first index, count, state root, the operator's public key.
 * Says "up N" on stdout as hosts come up, twice a second.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { LinkSession } from '../src/link/session.js';
import { systemClock } from '../src/core/system/clock.js';
import { Store } from '../src/core/store/store.js';
import { systemAccounts } from '../src/engine/converge/unix-accounts.js';
import { BASE_HANDLERS } from '../src/kinds/kind-handlers.js';
import { applyDeclaration, type HostEnv } from '../src/engine/apply/apply.js';
import { receiveDeclaration } from '../src/core/declaration/load.js';
import { checkPlanRequest, previewDeclaration } from '../src/engine/apply/plan-preview.js';
import { pinnedKeyRoot, signerRule } from '../src/core/declaration/trust-root.js';
import { FLEET_FIRST_CONTENT, simNode, quietLogger, upReporter } from './scale-support.js';

const [servers, first, count, stateRoot, publicKey] = process.argv.slice(2) as [string, string, string, string, string];
const quiet = quietLogger();


const hosts = Number(count);
const countUp = upReporter(hosts);

for (let i = Number(first); i < Number(first) + hosts; i++) {
  const node = simNode(i);
  const root = join(stateRoot, node, 'root');
  const stateDir = join(stateRoot, node, 'state');
  mkdirSync(join(root, 'etc'), { recursive: true });
  const env: HostEnv = { node, root, stateDir, store: Store.open(stateDir, quiet), log: quiet, clock: systemClock, accounts: systemAccounts(), handlers: BASE_HANDLERS };
  const first = Buffer.from(JSON.stringify({ version: 1, node, mode: 'converged', sequence: 1, resources: [{ type: 'file', id: 'app', path: '/etc/app.conf', content: FLEET_FIRST_CONTENT }] }));
  await applyDeclaration(env, { received: await receiveDeclaration(first, { source: 'first' }), origin: 'mesh', trigger: 'genesis', dryRun: false, mayChangeMode: true });
  let wasUp = false;
  const session = new LinkSession(
    { settings: { servers: servers.split(','), name: `sim ${node}` }, node, log: quiet, clock: systemClock, heartbeatMs: 600_000, rereadMs: 600_000 },
    {
      onDeclaration: () => {},
      onUp: () => {
        if (wasUp) return;
        wasUp = true;
        countUp();
      },
      onDown: () => {},
      status: async () => ({ node }),
      inventory: async () => ({}),
      heartbeat: () => ({ node }),
      plan: async (request, limit) => {
        const checked = await checkPlanRequest(request, { node, rule: signerRule([pinnedKeyRoot(publicKey)]) });
        if ('outcome' in checked) return checked;
        return previewDeclaration(env, checked.received, { diff: checked.diff, limit });
      },
    },
  );
  void session.open();
}
