import { once } from 'node:events';
import { connectLink } from '../../link/connect.js';
import { FleetFeed } from '../serve/feed.js';
import { listenPage } from '../serve/http.js';
import { listenPlan } from '../serve/listen.js';
import { EXIT } from '../../core/system/errors.js';
import { keepHeapSmall } from '../../core/system/memory.js';
import { stringFlag, type CommandContext } from '../../cli/context.js';
import { linkAuthFromFlags, serversFromFlag } from '../../cli/link-flags.js';

/**
 * `meshctl serve [--listen 127.0.0.1:8080]`: the fleet's page, live, read-only, until SIGINT or SIGTERM.
 * --https-cert and --https-key are the page's own certificate; the mesh is reached with meshctl's
 * credentials as every other command reaches it (--creds, --nkey, --tls-ca/--tls-cert/--tls-key, or the
 * mesh directory's), so the two certificates never share a flag.
 */
export async function serveCommand(ctx: CommandContext): Promise<number> {
  // A server that stays up, as the daemon does: its heap kept close to what it holds.
  keepHeapSmall();
  const plan = listenPlan({ listen: stringFlag(ctx.flags, 'listen'), httpsCert: stringFlag(ctx.flags, 'https-cert'), httpsKey: stringFlag(ctx.flags, 'https-key'), tokenFile: stringFlag(ctx.flags, 'token-file') });
  const nc = await connectLink({ servers: serversFromFlag(ctx.flags, 'nats://127.0.0.1:4222'), name: 'meshctl serve', persistent: false, reconnect: true, ...linkAuthFromFlags(ctx.flags) }, ctx.log);
  const now = () => ctx.clock.now().getTime();
  const feed = await FleetFeed.start({ nc, now, log: ctx.log });
  const server = await listenPage({ nc, feed, plan, log: ctx.log, now }).catch(async (err: unknown) => {
    // The address could not be taken: nothing stays open behind the refusal.
    feed.close();
    await nc.close();
    throw err;
  });
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
