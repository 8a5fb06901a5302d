import { objectsLackingParts } from '../../kinds/archive/objects.js';
import { domainApi, ensureSite } from '../../link/site.js';
import { siteNameProblem } from '../setup/leaf-conf.js';
import { HUB_DOMAIN } from '../../link/wire.js';
import { EXIT, refused, usageError } from '../../core/system/errors.js';
import { output, type CommandContext } from '../../cli/context.js';
import { connectWire } from './mesh-flags.js';

/**
 * `meshctl site SITE`: once the site's leaf node (made by `meshctl init --leaf SITE`) is up and
 * connected, makes the site's streams on it, through the hub: its copy of the declarations and of the
 * archives, and its reports' store and forward, which the hub's reports stream sources. Running it again
 * changes nothing that is there, and names the archives the site's copy lacks parts of.
 */
export async function siteCommand(ctx: CommandContext): Promise<number> {
  const site = ctx.args[0]!;
  const problem = siteNameProblem(site);
  if (problem) throw usageError(`${site}: ${problem}`);
  const nc = await connectWire(ctx);
  try {
    const setUp = await ensureSite(nc, site, HUB_DOMAIN).catch((err: Error) => {
      throw refused(`the site ${site}'s leaf node does not answer through the hub (${err.message}): is it running, connected, and made by meshctl init --leaf ${site}?`);
    });
    const lacking = await objectsLackingParts(nc, domainApi(site));
    output(ctx, { site, ...setUp, archivesLackingParts: lacking }, () =>
      [
        ...setUp.created.map((what) => `made ${what}`),
        ...setUp.present.map((what) => `${what}: there already`),
        ...lacking.map(
          (o) =>
            `the site's copy of the archive store lacks parts of '${o.name}' (holds ${o.held} of ${o.parts}, lost in a short cut of the uplink): its hosts read it at the hub while the uplink is up; upload it again (meshctl put-archive FILE --name ${o.name}) to give the site a whole copy`,
        ),
        `the site ${site} works through a cut of its uplink: its hosts read their declarations and leave their reports at its leaf node`,
      ].join('\n'),
    );
    return EXIT.ok;
  } finally {
    await nc.close();
  }
}
