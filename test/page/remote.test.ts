import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ensureWire } from '../../src/link/control.js';
import { launchBrowser, screenshot, type TestBrowser } from '../support/browser.js';
import { projectDir, runCli } from '../support/cli.js';
import { NatsServer } from '../support/nats.js';
import { mutualTls } from '../support/nats-auth.js';
import { OFF_LOOPBACK_ADDRESS, TestNetns } from '../support/netns.js';
import { startServe, type Served } from '../support/serve.js';
import { SimHosts } from '../support/sim-hosts.js';
import { scratch } from '../support/tree.js';

/** A self-signed certificate for the page's address, and the base64 SHA-256 of its public key (what the browser is told to trust). */
function pageCertificate(dir: string): { cert: string; key: string; spki: string } {
  const cert = join(dir, 'page.pem');
  const key = join(dir, 'page.key');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${OFF_LOOPBACK_ADDRESS}`, '-addext', `subjectAltName=IP:${OFF_LOOPBACK_ADDRESS}`, '-keyout', key, '-out', cert], { stdio: 'pipe' });
  const spki = execFileSync('sh', ['-c', `openssl x509 -in '${cert}' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`], { encoding: 'utf8' }).trim();
  return { cert, key, spki };
}

/**
 * `meshctl serve` on an address that is not loopback (192.0.2.1 in a network namespace of the test's
 * own), as an operator serves the page to a team: over HTTPS with its own certificate, every request
 * bearing the token, while meshctl reaches a nats-server that demands mutual TLS with its own client
 * certificate. The browser (Debian's chromium) runs in the same namespace.
 */
describe('meshctl serve off loopback', () => {
  const s = scratch('mesh-page-remote-');
  const TOKEN = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
  let netns: TestNetns;
  let server: NatsServer;
  let nc: NatsConnection;
  let served: Served;
  let browser: TestBrowser;

  beforeAll(async () => {
    const tls = mutualTls(s.dir);
    server = await NatsServer.start({ configFile: tls.conf });
    nc = await connect({ servers: [server.url], tls: { caFile: tls.ca, certFile: tls.cert, keyFile: tls.key } });
    await ensureWire(nc);
    const sims = await SimHosts.make(nc, ['remote-web-1', 'remote-db-1']);
    for (const node of ['remote-web-1', 'remote-db-1']) await sims.report(node);
    netns = TestNetns.make(`mesh-page-${process.pid}`, s.dir);
    await netns.carry(server.port);
    const page = pageCertificate(s.dir);
    const tokenFile = join(s.dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    served = await startServe(
      ['--listen', `${OFF_LOOPBACK_ADDRESS}:0`, '--https-cert', page.cert, '--https-key', page.key, '--token-file', tokenFile, '--server', `tls://127.0.0.1:${server.port}`, '--tls-ca', tls.ca, '--tls-cert', tls.cert, '--tls-key', tls.key],
      { program: netns.exec([process.execPath, join(projectDir, 'bin/meshctl')]) },
    );
    browser = await launchBrowser({ inside: netns.exec([]), trustKey: page.spki });
  });

  afterAll(async () => {
    await browser?.close();
    await served?.stop();
    await nc?.close();
    netns?.delete();
    await server?.stop();
    s.cleanup();
  });

  it('refuses to start on an address other than loopback without its certificate, key and token file, naming what is missing', async () => {
    const r = await runCli('meshctl', ['serve', '--listen', `${OFF_LOOPBACK_ADDRESS}:8443`, '--https-cert', join(s.dir, 'page.pem'), '--server', server.url]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--listen ${OFF_LOOPBACK_ADDRESS}:8443 is not loopback: it needs --https-key, --token-file`);
  });

  it('answers a request without the bearer token with 401 and nothing of the fleet; with it, the fleet', async () => {
    expect(served.url).toMatch(new RegExp(`^https://${OFF_LOOPBACK_ADDRESS.replaceAll('.', '\\.')}:\\d+/$`));
    const page = await browser.page();
    const response = await page.goto(served.url);
    expect(response?.status()).toBe(401);
    expect(response?.headers()['www-authenticate']).toBe('Bearer realm="mesh"');
    expect(await page.$eval('h1', (h) => h.textContent)).toBe('Token needed');
    expect(await page.content()).not.toContain('remote-web-1');
    await screenshot(page, 'login');
    // Every way in without the token, or with a wrong one, is refused the same: the events, a node, the script.
    const statuses = await page.evaluate(async (token) => {
      const ask = async (path: string, auth?: string) => (await fetch(path, auth ? { headers: { Authorization: auth } } : {})).status;
      return {
        events: await ask('/events'),
        node: await ask('/api/node/remote-web-1'),
        script: await ask('/assets/page.js'),
        wrong: await ask('/api/node/remote-web-1', `Bearer ${token.slice(1)}x`),
        right: await ask('/api/node/remote-web-1', `Bearer ${token}`),
      };
    }, TOKEN);
    expect(statuses).toEqual({ events: 401, node: 401, script: 401, wrong: 401, right: 200 });
    // The login form: a wrong token is the form again, the right one opens the fleet.
    await page.type('input[name="token"]', 'not-the-token');
    const wrong = await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    expect(wrong[0]?.status()).toBe(401);
    await page.type('input[name="token"]', TOKEN);
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    await page.waitForSelector('tr[data-node="remote-web-1"]');
    expect(await page.$$eval('table.fleet tbody tr', (trs) => trs.map((tr) => tr.getAttribute('data-node')).sort())).toEqual(['remote-db-1', 'remote-web-1']);
    expect(new URL(page.url()).protocol).toBe('https:');
    await page.close();
  });
});
