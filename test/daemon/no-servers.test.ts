import { describe, expect, it } from 'vitest';
import type { HostConfig } from '../../src/core/config/config.js';
import type { Clock } from '../../src/core/system/clock.js';
import type { Logger } from '../../src/core/system/log.js';
import { DaemonLink, NO_SERVERS_SAID_EVERY_MS } from '../../src/host/daemon/daemon-link.js';
import type { LinkHandlers } from '../../src/link/session.js';

/**
 * A daemon whose configuration names no servers (a machine never enrolled): it says so at once, with
 * what would end the wait, and again once a minute while it waits; closing the link ends the saying.
 * The clock is held still and moved by hand.
 */
describe('the link of a host with no servers', () => {
  it('says at once that it is not linked and how to enrol it, then once a minute, until closed', () => {
    const timers: Array<{ ms: number; fn: () => void; cancelled: boolean }> = [];
    const clock = {
      after: (ms: number, fn: () => void) => {
        const timer = { ms, fn, cancelled: false };
        timers.push(timer);
        return () => void (timer.cancelled = true);
      },
    } as unknown as Clock;
    const said: string[] = [];
    const log = { warn: (message: string) => said.push(message) } as unknown as Logger;
    const link = new DaemonLink(log, clock, () => {
      throw new Error('no signer is needed without servers');
    });

    const close = link.open({ node: 'web-1', servers: [] } as unknown as HostConfig, {} as LinkHandlers);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain('no servers in the configuration');
    expect(said[0]).toContain('mesh-host genesis BUNDLE');
    expect(said[0]).toContain('once a minute');
    expect(timers.map((t) => t.ms)).toEqual([NO_SERVERS_SAID_EVERY_MS]);
    expect(NO_SERVERS_SAID_EVERY_MS).toBe(60_000);

    timers[0]!.fn();
    expect(said).toHaveLength(2);
    expect(timers).toHaveLength(2);

    close();
    expect(timers[1]!.cancelled).toBe(true);
  });
});
