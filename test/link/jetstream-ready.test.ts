import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { freePort, natsUnavailable, NatsServer } from '../support/nats.js';
import { runCli } from '../support/cli.js';
import { scratch } from '../support/tree.js';
import { awaitJetStream, whileClusterForms } from '../../src/link/jetstream-ready.js';

const unavailable = natsUnavailable();

/**
 * A cluster of three made by `meshctl init` answers JetStream only once two of its members have elected a
 * meta leader: with one started, a command waits (and says why when it gives up); the second's start ends
 * the wait, and the command goes on.
 */
describe.skipIf(unavailable !== undefined && !process.env.CI)(`meshctl waits for a just-started cluster's JetStream${unavailable ? ` (cannot run: ${unavailable})` : ''}`, () => {
  const work = scratch('mesh-host-js-ready-');
  const servers: NatsServer[] = [];
  let nc: NatsConnection | undefined;
  afterAll(async () => {
    await nc?.close();
    for (const s of servers) await s.stop();
    work.cleanup();
  });

  it('refuses, naming the cause, while no leader can be elected, and returns once a second member starts', async () => {
    const dir = join(work.dir, 'mesh');
    const ports = [await freePort(), await freePort(), await freePort()];
    const routes = [await freePort(), await freePort(), await freePort()];
    const leaves = [await freePort(), await freePort(), await freePort()];
    const init = await runCli('meshctl', ['init', dir, '--servers', '3', '--port', ports.join(','), '--cluster-port', routes.join(','), '--leaf-port', leaves.join(','), '--log-level', 'warn']);
    expect(init.code, init.stderr).toBe(0);
    servers.push(await NatsServer.start({ port: ports[0]!, wholeConfig: join(dir, 'nats-server-1.conf') }));
    nc = await connect({ servers: servers[0]!.url, authenticator: credsAuthenticator(readFileSync(join(dir, 'meshctl.creds'))) });

    // One member of three can never be a quorum: the wait runs out, and says what it waited for.
    await expect(awaitJetStream(nc, { timeoutMs: 1_500, requestMs: 500 })).rejects.toThrow(/JetStream did not become ready within 2 s .*cluster's servers all started/);

    // The wait is begun first, then the second member is started: the wait ends on the election itself.
    const waiting = awaitJetStream(nc, { timeoutMs: 120_000 });
    servers.push(await NatsServer.start({ port: ports[1]!, wholeConfig: join(dir, 'nats-server-2.conf') }));
    await waiting;
    const status = await runCli('meshctl', ['status', '--json', '--mesh', dir]);
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toHaveProperty('nodes');
  }, 180_000);
});

describe('awaitJetStream', () => {
  /** A connection whose JetStream answers with each reply in turn (an Error is thrown, as a timeout is). */
  const answering = (replies: Array<object | Error>) => {
    let asked = 0;
    const nc = {
      request: async () => {
        const reply = replies[Math.min(asked++, replies.length - 1)]!;
        if (reply instanceof Error) throw reply;
        return { json: () => reply };
      },
      // Its status says nothing: no permission of its is ever refused.
      status: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined), return: async () => ({ done: true, value: undefined }) }) }),
    } as unknown as NatsConnection;
    return { nc, asked: () => asked };
  };
  const instant = { sleep: async () => {} };

  it('asks again after a timeout and after "temporarily unavailable", and returns on the first real answer', async () => {
    const js = answering([new Error('TIMEOUT'), { error: { code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' } }, { memory: 0 }]);
    await awaitJetStream(js.nc, instant);
    expect(js.asked()).toBe(3);
  });

  it('leaves any other error to the command that needs JetStream (it says what it means)', async () => {
    const js = answering([{ error: { code: 503, err_code: 10039, description: 'jetstream not enabled for account' } }]);
    await awaitJetStream(js.nc, instant);
    expect(js.asked()).toBe(1);
  });

  it('gives up at its bound, naming the last answer', async () => {
    let t = 0;
    const js = answering([{ error: { code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' } }]);
    await expect(awaitJetStream(js.nc, { timeoutMs: 5_000, now: () => t, sleep: async (ms) => void (t += ms) })).rejects.toThrow(
      "the mesh's JetStream did not become ready within 5 s (JetStream system temporarily unavailable)",
    );
    expect(js.asked()).toBe(20);
  });
});

describe('whileClusterForms', () => {
  const refusal = (code: number) => Object.assign(new Error('no suitable peers for placement'), { code });
  const instant = { sleep: async () => {} };

  it('makes the stream again while the cluster has too few peers for it, and returns what it made', async () => {
    let tries = 0;
    const made = await whileClusterForms(async () => {
      if (++tries < 3) throw refusal(10005);
      return 'bucket';
    }, instant);
    expect([made, tries]).toEqual(['bucket', 3]);
  });

  it('passes any other error on at once, and the placement refusal once its bound has passed', async () => {
    let tries = 0;
    await expect(whileClusterForms(async () => void (tries++, (() => { throw refusal(10058); })()), instant)).rejects.toThrow('no suitable peers');
    expect(tries).toBe(1);
    let t = 0;
    await expect(whileClusterForms(async () => { throw refusal(10005); }, { timeoutMs: 1_000, now: () => t, sleep: async (ms) => void (t += ms) })).rejects.toThrow('no suitable peers');
  });
});
