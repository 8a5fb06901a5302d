import { once } from 'node:events';
import { connectLink } from '../../link/connect.js';
import { FleetFeed } from '../../serve/feed.js';
import { listenPage } from '../../serve/http.js';
import { listenPlan } from '../../serve/listen.js';
import { EXIT } from '../../system/errors.js';
import { stringFlag, type CommandContext } from '../context.js';
import { linkAuthFromFlags, serversFromFlag } from '../link-flags.js';

/**
 * `meshctl serve [--listen 127.0.0.1:8080]`: the fleet's page, live, read-only, until SIGINT or SIGTERM.
 * Its --tls-cert and --tls-key are the page's own certificate; the mesh is reached with meshctl's
 * credentials (--creds, --nkey, --tls-ca, or the mesh directory's).
 */
export async function serveCommand(ctx: CommandContext): Promise<number> {
  const plan = listenPlan({ listen: stringFlag(ctx.flags, 'listen'), tlsCert: stringFlag(ctx.flags, 'tls-cert'), tlsKey: stringFlag(ctx.flags, 'tls-key'), tokenFile: stringFlag(ctx.flags, 'token-file') });
  const { tls: _pageTls, ...auth } = linkAuthFromFlags(ctx.flags);
  const tlsCa = stringFlag(ctx.flags, 'tls-ca');
  const nc = await connectLink({ servers: serversFromFlag(ctx.flags, 'nats://127.0.0.1:4222'), name: 'meshctl serve', persistent: false, reconnect: true, ...auth, ...(tlsCa ? { tls: { ca: tlsCa } } : {}) }, ctx.log);
  const now = () => ctx.clock.now().getTime();
  const feed = await FleetFeed.start({ nc, now, log: ctx.log });
  const server = await listenPage({ nc, feed, plan, log: ctx.log, now });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : plan.port;
  const host = plan.host.includes(':') ? `[${plan.host}]` : plan.host;
  ctx.print(`serving the mesh's page on ${plan.tls ? 'https' : 'http'}://${host}:${port}/${plan.token ? ' (a bearer token is needed)' : ''}`);
  const ended = Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
  await ended;
  server.closeAllConnections();
  server.close();
  feed.close();
  await nc.close();
  return EXIT.ok;
}
