import { describe, expect, it } from 'vitest';
import { connect } from '@nats-io/transport-node';
import type { HostInventory } from '../../src/host/env/host-inventory.js';
import { inventorySubject, statusSubject } from '../../src/link/wire.js';
import { runCli } from '../support/cli.js';
import { useMesh } from '../support/mesh.js';
import { natsUnavailable } from '../support/nats.js';

const unavailable = natsUnavailable();

/**
 * The mesh asks a running daemon for its inventory over the link: the answer is the same inventory
 * `mesh-host inventory` prints on the machine, filters and found firewall included. Both read this
 * machine's real ruleset (read only: `nft -j list ruleset`, the legacy saves, `ufw status`).
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`the daemon's inventory, asked over a real nats-server${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const mesh = useMesh();

  it('carries the filters, the tools not installed and the found firewall, as mesh-host inventory does; status carries the found firewall as kept', async () => {
    const h = await mesh.enrol();
    await h.waitForReports(1);
    const nc = await connect({ servers: [mesh.server.url] });
    let asked: HostInventory;
    let status: { foundFirewall: unknown };
    try {
      asked = (await nc.request(inventorySubject(h.node), '', { timeout: 30_000 })).json<HostInventory>();
      status = (await nc.request(statusSubject(h.node), '', { timeout: 10_000 })).json<typeof status>();
    } finally {
      await nc.close();
    }
    const local = await runCli('mesh-host', ['inventory', '--json', ...h.flags, '--log-level', 'warn']);
    expect(local.code, local.stderr).toBe(0);
    const printed = JSON.parse(local.stdout) as HostInventory;

    expect(Object.keys(asked).sort()).toEqual(Object.keys(printed).sort());
    expect(asked).toHaveProperty('filters');
    expect(asked).toHaveProperty('foundFirewall');
    // The same machine read twice: the same filters (or the same findings of a tool that cannot be asked).
    expect(asked.filters).toEqual(printed.filters);
    expect(asked.filtersNotInstalled).toEqual(printed.filtersNotInstalled);
    expect(asked.foundFirewall?.tools.map((t) => [t.tool, t.state])).toEqual(printed.foundFirewall?.tools.map((t) => [t.tool, t.state]));
    expect(asked.services).toEqual([]);
    expect(status.foundFirewall).toEqual(expect.any(Array));
  });
});
